package jsonrpc

import "sync"

// outbox is a bounded FIFO of encoded messages for one Peer, written by a
// goroutine that exists only while the outbox is not empty. Whoever queues
// into it never waits for the connection: a Group's broadcasts go through
// one per member.
type outbox struct {
	mu      sync.Mutex
	msgs    [][]byte
	size    int  // bytes in msgs
	writing bool // a goroutine is flushing msgs

	leave  func() bool // unregisters the member's end hook (under Group.mu)
	flushP func()      // flush(p) for the member p, made once (see newOutbox)
}

// newOutbox returns the outbox of p. Its flush function is made here, once,
// not a closure per broadcast.
func newOutbox(p *Peer) *outbox {
	o := &outbox{}
	o.flushP = func() { o.flush(p) }
	return o
}

// keptQueue is the capacity of msgs that an outbox keeps once it empties:
// the array is reused by the next broadcast rather than made anew; one that
// a burst grew larger goes.
const keptQueue = 8

// push queues msg unless that would put more than maxMsgs messages or
// maxBytes bytes in the outbox (a limit <= 0 is no limit), and starts a
// goroutine of p's to write them if none runs. It reports whether msg was
// queued.
func (o *outbox) push(p *Peer, msg []byte, maxMsgs, maxBytes int) bool {
	o.mu.Lock()
	if maxMsgs > 0 && len(o.msgs) >= maxMsgs || maxBytes > 0 && o.size+len(msg) > maxBytes {
		o.mu.Unlock()
		return false
	}
	o.msgs = append(o.msgs, msg)
	o.size += len(msg)
	start := !o.writing
	o.writing = true
	o.mu.Unlock()
	if start && !p.goOwned(o.flushP) {
		o.clear() // the connection has ended: nothing will be written
	}
	return true
}

// len returns the number of messages queued.
func (o *outbox) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.msgs)
}

// clear drops whatever is queued.
func (o *outbox) clear() {
	o.mu.Lock()
	o.msgs, o.size, o.writing = nil, 0, false
	o.mu.Unlock()
}

// flush writes the outbox to p until it is empty. Once the connection has
// ended every write fails at once, so it empties quickly.
func (o *outbox) flush(p *Peer) {
	for {
		o.mu.Lock()
		if len(o.msgs) == 0 {
			o.writing = false
			o.mu.Unlock()
			return
		}
		// Taken from the front, the rest moved down (at most MaxQueue,
		// 256 by default, and mostly none), so that the array is kept.
		msg := o.msgs[0]
		n := copy(o.msgs, o.msgs[1:])
		o.msgs[n] = nil
		o.msgs = o.msgs[:n]
		if n == 0 && cap(o.msgs) > keptQueue {
			o.msgs = nil
		}
		o.size -= len(msg)
		o.mu.Unlock()
		// One message at a time, each until written, so that MaxQueue
		// counts what the member has not taken yet. A failed write ends
		// the Peer, which says why. (No cycle: nothing the read loop
		// waits for waits for this goroutine.) msg is shared by the
		// Group's members: not a pooled buffer.
		if m, err := p.out.send(&outgoing{data: msg, written: true}); err == nil && m != nil {
			<-m.written // queued behind others' messages, not written in place
		}
	}
}
