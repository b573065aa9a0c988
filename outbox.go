package jsonrpc

import (
	"slices"
	"sync"
)

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

	// packMax and packBytes bound a packed message (Options.PackNotifications):
	// its elements and its bytes; packMax < 2 packs nothing.
	packMax, packBytes int
}

// maxPackBytes bounds a packed message, below the Conn's own limit: half
// the read limit of coder/websocket's clients by default (32 KiB), since
// this side cannot know the remote's, which may be smaller than its own
// (TestPackNotificationsRespectsRemoteReadLimit); and a packed message is a
// copy, kept for each member until its writer is done with it, so 200
// members that stop reading hold at most 3.2 MiB of them
// (TestPackedBroadcastKeepsNoCopyPerMember: 340-396 MiB at 1 MiB each).
const maxPackBytes = 16 << 10

// newOutbox returns the outbox of p. Its flush function is made here, once,
// not a closure per broadcast.
func newOutbox(p *Peer) *outbox {
	o := &outbox{}
	o.flushP = func() { o.flush(p) }
	if n := min(p.opts.PackNotifications, p.opts.MaxBatch); n >= 2 {
		o.packMax, o.packBytes = n, maxPackBytes
		if p.maxMsg > 0 {
			o.packBytes = min(p.maxMsg, maxPackBytes)
		}
	}
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
		if o.packMax >= 2 && len(o.msgs) > 1 {
			if mb := o.pack(); mb != nil {
				o.mu.Unlock()
				// A pooled buffer of its own: the sendQueue frees it
				// once written.
				if m, err := p.out.send(&outgoing{data: mb.b, buf: mb, written: true}); err == nil && m != nil {
					<-m.written
				}
				continue
			}
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

// pack takes the messages at the front of the queue, as many as fit in one
// message of at most packMax elements and packBytes bytes, and returns them
// as one JSON-RPC batch array in a pooled buffer; or nil, leaving the queue
// as it is, when fewer than two fit. Called with o.mu held.
func (o *outbox) pack() *msgBuf {
	size, k := 1, 0 // '[' so far
	for _, msg := range o.msgs[:min(len(o.msgs), o.packMax)] {
		if size+len(msg)+1 > o.packBytes { // its bytes and ',' or ']'
			break
		}
		size += len(msg) + 1
		k++
	}
	if k < 2 {
		return nil
	}
	mb := newMsgBuf()
	if cap(mb.b) > 2*maxPackBytes {
		// A large pooled buffer would be held, and charged, at its
		// capacity for as long as the member takes to read this pack.
		mb.b = make([]byte, 0, size)
	}
	b := slices.Grow(mb.b, size)
	for i, msg := range o.msgs[:k] {
		if i == 0 {
			b = append(b, '[')
		} else {
			b = append(b, ',')
		}
		b = append(b, msg...)
		o.size -= len(msg)
	}
	mb.b = append(b, ']')
	n := copy(o.msgs, o.msgs[k:])
	clear(o.msgs[n:])
	o.msgs = o.msgs[:n]
	if n == 0 && cap(o.msgs) > keptQueue {
		o.msgs = nil
	}
	return mb
}
