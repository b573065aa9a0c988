package jsonrpc

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"
)

// sendQueue is the Peer's outbound queue. Every message the Peer sends is
// queued here, and one goroutine, the writer, owns the Conn's Write: it
// exists while the queue is not empty (and lingers a moment after), so an
// idle Peer holds none.
//
// Nobody but the writer ever waits for the Conn, so a caller can leave when
// its ctx ends: a message still queued is withdrawn (it never reaches the
// wire), one being written is left to the writer.
//
// The queue is budgeted in bytes (Options.MaxOutboundBytes). Calls,
// notifications and handlers' replies wait for room; the read loop's own
// replies (refusals, parse errors) and cancel notifications never wait:
// they have a small budget of their own (maxControlBytes), and a remote side
// that leaves even that unread ends the connection (ErrSlowConsumer), since
// waiting would stop the read loop.
type sendQueue struct {
	p   *Peer
	max int // bytes of budgeted messages queued or being written

	mu       sync.Mutex
	q        []*outMsg
	bytes    int           // budgeted bytes queued or being written
	ctlBytes int           // control bytes queued or being written
	waiters  int           // producers waiting for room
	watchers int           // callers waiting for their message's write
	room     chan struct{} // closed when bytes drop; replaced after
	running  bool          // the writer goroutine exists
	waiting  bool          // the writer lingers for work
	wake     chan struct{} // wakes a lingering writer; 1-buffered; made when it lingers, dropped when it exits
	flushed  chan struct{} // non-nil while someone waits for an empty queue
	closed   error         // set once the connection has ended

	// seq numbers the messages in the order they are queued, which is
	// the order they are written: the last one taken. A pending call
	// keeps its message's, so that an error naming no call can be
	// attributed to the only message it can be the answer to (see
	// pendingTable.deliverUnattributed).
	seq uint64

	// withdrawn counts the messages in q withdrawn by their callers; q
	// is compacted when they are many (see withdraw).
	withdrawn int
}

// outMsg is one queued message.
type outMsg struct {
	data    []byte
	buf     *msgBuf         // data's pooled buffer, freed once written; or nil
	ctx     context.Context // the caller's; once it has ended the writer skips the message
	size    int             // what it is charged: the capacity it keeps alive
	control bool
	read    uint64        // the inbound message it belongs to (see Router)
	seq     uint64        // its place in the order of messages queued
	state   uint8         // queued, taken or withdrawn; under sendQueue.mu
	written chan struct{} // if not nil, closed once written or failed
	err     error         // the outcome, set before written is closed
}

const (
	msgQueued uint8 = iota
	msgTaken
	msgWithdrawn
)

// outgoing is a message handed to the send queue, and what the queue is to
// do with it.
type outgoing struct {
	data    []byte
	buf     *msgBuf         // data's pooled buffer, freed once written or withdrawn (not on an error); or nil
	ctx     context.Context // the caller's; nil for one that never ends
	written bool            // the caller waits for the write's outcome (outMsg.written)
	read    uint64          // the inbound message it belongs to (see Router)
	reply   bool            // a handler's reply: counted while it waits for room (see sendReply)

	// The calls it carries, which the pending table is told its seq of
	// as it is queued, before it can be written: one call's id, several
	// (a round of an intercepted Batch), or a Batch's group.
	id    ID
	ids   []ID
	group *replyGroup
}

// charge is what a message is charged against a budget: the capacity of
// its bytes, which is what it keeps alive, pooled buffer or not.
func charge(data []byte) int { return cap(data) }

// maxControlBytes bounds the read loop's replies and the cancel
// notifications waiting to be written.
const maxControlBytes = 1 << 20

func (s *sendQueue) init(p *Peer) {
	s.p = p
	s.max = p.opts.MaxOutboundBytes
}

// enqueue queues o, waiting while the queue is over its budget (a message
// larger than the whole budget goes alone) until o's ctx or the connection
// ends. A nil ctx waits for the connection only; one that has already
// ended queues nothing. If o.written, the returned message's written
// channel will get the outcome.
func (s *sendQueue) enqueue(o *outgoing) (*outMsg, error) {
	if err := s.p.checkSize(len(o.data)); err != nil {
		return nil, err
	}
	ctx := o.ctx
	var done <-chan struct{}
	if ctx != nil {
		if ctx.Err() != nil {
			// Ended before it was queued: never sent, as a message
			// whose ctx ends while it is queued is not.
			return nil, ctx.Err()
		}
		done = ctx.Done()
	}
	m := &outMsg{data: o.data, buf: o.buf, ctx: ctx, read: o.read}
	copied := o.buf != nil && cap(o.data) > 4*len(o.data)+4096
	if copied {
		// A small message in a large pooled buffer (one a large message
		// gave back): queued, it would keep the whole buffer. A copy of
		// its own size goes instead, and the buffer back to the pool once
		// the message is queued (on an error the caller still owns it).
		m.data, m.buf = bytes.Clone(o.data), nil
	}
	m.size = charge(m.data)
	if o.written {
		m.written = make(chan struct{})
	}
	counted := false
	defer func() {
		if counted {
			s.p.inbound.countReply(-m.size)
		}
	}()
	s.mu.Lock()
	for s.closed == nil && s.bytes > 0 && s.bytes+m.size > s.max {
		if s.room == nil {
			s.room = make(chan struct{})
		}
		room := s.room
		s.waiters++
		s.mu.Unlock()
		if o.reply && !counted {
			s.p.inbound.countReply(m.size)
			counted = true
		}
		select {
		case <-room:
		case <-done:
			s.mu.Lock()
			s.waiters--
			s.mu.Unlock()
			return nil, ctx.Err()
		case <-s.p.done:
		}
		s.mu.Lock()
		s.waiters--
	}
	if s.closed != nil {
		s.mu.Unlock()
		return nil, s.p.closedErr()
	}
	s.bytes += m.size
	start := s.push(m, o)
	s.mu.Unlock()
	if copied {
		o.buf.free() // see above
	}
	s.start(start)
	return m, nil
}

// send writes o in the writer's place (see direct) when its ctx can never
// end, and queues it otherwise, as enqueue does. The returned message is
// nil when it was written in place.
func (s *sendQueue) send(o *outgoing) (*outMsg, error) {
	if err := s.p.checkSize(len(o.data)); err != nil {
		return nil, err
	}
	if o.ctx == nil || o.ctx.Done() == nil {
		if ok, err := s.direct(o); ok {
			return nil, err
		}
	}
	return s.enqueue(o)
}

// sendReply sends a handler's reply (buf, for the inbound message read,
// within the Conn's limit) as send does with no ctx. While it waits for
// room in the outbound queue, its bytes are counted with the inbound work
// (RetainedBytes): the call is still being served. They take no budget:
// the handler holds its slot meanwhile, so at most MaxConcurrent replies
// wait, and a remote side that reads slowly is not refused for it.
func (s *sendQueue) sendReply(buf *msgBuf, read uint64) {
	o := outgoing{data: buf.b, buf: buf, read: read, reply: true}
	if ok, _ := s.direct(&o); ok {
		return
	}
	_, _ = s.enqueue(&o)
}

// direct writes o on the calling goroutine, as the writer would, when
// nothing is queued and nobody writes, and reports whether it did (and the
// write's error). It is for callers that have no ctx to honour (a runner's
// reply, a call with a ctx that never ends), which may wait for the Conn:
// it saves the hand-over to the writer goroutine. The caller counts as
// waiting for a write meanwhile (see blocked).
func (s *sendQueue) direct(o *outgoing) (ok bool, err error) {
	size := charge(o.data)
	s.mu.Lock()
	if s.running || len(s.q) > 0 || s.closed != nil {
		s.mu.Unlock()
		return false, nil
	}
	s.running = true // holds the writer's place: others queue behind
	s.watchers++
	s.bytes += size
	s.numbered(o)
	s.mu.Unlock()

	err = s.p.writeConn(o.data, o.read)

	s.mu.Lock()
	s.watchers--
	s.releaseBytes(size, false)
	start := len(s.q) > 0 && s.closed == nil // queued meanwhile: the writer takes over
	if !start {
		s.running = false
		if s.flushed != nil {
			close(s.flushed)
			s.flushed = nil
		}
	}
	s.mu.Unlock()
	s.start(start)
	if err != nil {
		s.close(err)
	} else if o.buf != nil {
		o.buf.free()
	}
	return true, err
}

// numbered gives o the next seq, and tells the pending table, for the
// calls o carries, before o can be written: a reply (or an error with id
// null) may come back the moment it is. Called with s.mu held (the table's
// mu nests inside it, never the other way).
func (s *sendQueue) numbered(o *outgoing) uint64 {
	s.seq++
	if !o.id.IsZero() || o.ids != nil || o.group != nil {
		s.p.pending.sent(o, s.seq)
	}
	return s.seq
}

// control queues data (belonging to the inbound message read) without
// waiting, within maxControlBytes. It reports false if the message did not
// fit or the connection has ended.
func (s *sendQueue) control(data []byte, read uint64) bool {
	size := charge(data)
	s.mu.Lock()
	if s.closed != nil || s.ctlBytes > 0 && s.ctlBytes+size > maxControlBytes {
		s.mu.Unlock()
		return false
	}
	s.ctlBytes += size
	start := s.push(&outMsg{data: data, size: size, control: true, read: read}, nil)
	s.mu.Unlock()
	s.start(start)
	return true
}

// push appends m (the queued form of o, or of a control message when o is
// nil) and reports whether a writer must be started. Called with s.mu
// held.
func (s *sendQueue) push(m *outMsg, o *outgoing) (start bool) {
	if o != nil {
		m.seq = s.numbered(o)
	} else {
		s.seq++
		m.seq = s.seq
	}
	s.q = append(s.q, m)
	if s.running {
		if s.waiting {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
		return false
	}
	s.running = true
	return true
}

// start starts the writer if push said so. Its goroutine is owned by the
// Peer; once the connection has ended none starts, and the queue is failed.
func (s *sendQueue) start(start bool) {
	if start && !s.p.goOwned(s.run) {
		s.close(s.p.closedErr())
	}
}

// withdraw takes m out of the queue if the writer has not taken it yet. It
// reports whether m is withdrawn, now or before: whether it will never
// reach the wire.
func (s *sendQueue) withdraw(m *outMsg) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.state != msgQueued {
		return m.state == msgWithdrawn
	}
	s.drop(m)
	if s.withdrawn++; s.withdrawn > compactAfter && s.withdrawn > len(s.q)/2 {
		s.compact()
	}
	return true
}

// drop withdraws m, still queued: it gives its bytes back to the budget and
// lets go of them at once, not when the writer comes to it (behind a write
// that does not return, the callers that leave would otherwise fill the
// heap with what they gave back to the budget). Its place in the queue
// goes when the writer pops it, or when the queue is compacted. Called
// with s.mu held.
func (s *sendQueue) drop(m *outMsg) {
	m.state = msgWithdrawn
	s.release(m)
	if m.buf != nil {
		m.buf.free()
	}
	m.data, m.buf, m.ctx = nil, nil, nil
}

// compactAfter is how many withdrawn messages the queue keeps in place
// before it may compact.
const compactAfter = 32

// compact drops the withdrawn messages from the queue. Called with s.mu
// held.
func (s *sendQueue) compact() {
	q := s.q[:0]
	for _, m := range s.q {
		if m.state == msgQueued {
			q = append(q, m)
		}
	}
	clear(s.q[len(q):])
	s.q, s.withdrawn = q, 0
}

// release gives m's bytes back to the budget. Called with s.mu held.
func (s *sendQueue) release(m *outMsg) { s.releaseBytes(m.size, m.control) }

// releaseBytes gives n bytes back to the budget (the control budget if
// control). Called with s.mu held.
func (s *sendQueue) releaseBytes(n int, control bool) {
	if s.closed != nil {
		return // close has reset the counters
	}
	if control {
		s.ctlBytes -= n
		return
	}
	s.bytes -= n
	if s.room != nil {
		close(s.room)
		s.room = nil
	}
}

// watch counts a caller that waits for its message's write (n = 1), or
// one that stopped waiting (n = -1).
func (s *sendQueue) watch(n int) {
	s.mu.Lock()
	s.watchers += n
	s.mu.Unlock()
}

// lastSeq returns the seq of the last message queued.
func (s *sendQueue) lastSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// blocked reports whether anyone waits on the queue, for room or for a
// write: someone whose progress depends on the remote side reading (see
// Peer.mayPushBack).
func (s *sendQueue) blocked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiters > 0 || s.watchers > 0
}

// run is the writer: it writes queued messages in order until the queue has
// stayed empty for the linger time, or the connection ends.
func (s *sendQueue) run() {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		m := s.next()
		for m == nil && s.closed == nil {
			if s.flushed != nil {
				close(s.flushed)
				s.flushed = nil
			}
			if timer == nil {
				timer = time.NewTimer(linger)
			} else {
				timer.Reset(linger)
			}
			if s.wake == nil {
				s.wake = make(chan struct{}, 1)
			}
			wake := s.wake
			s.waiting = true
			s.mu.Unlock()
			expired := false
			select {
			case <-wake:
			case <-timer.C:
				expired = true
			case <-s.p.done:
			}
			s.mu.Lock()
			s.waiting = false
			if m = s.next(); m == nil && expired {
				break
			}
		}
		if m == nil {
			s.running = false
			s.wake = nil // an idle Peer keeps none (TestIdlePeerHeapAfterOneCall)
			if s.flushed != nil {
				close(s.flushed)
				s.flushed = nil
			}
			s.mu.Unlock()
			return
		}
		m.state = msgTaken
		s.mu.Unlock()

		err := s.p.writeConn(m.data, m.read)
		s.mu.Lock()
		s.release(m)
		m.ctx = nil
		s.mu.Unlock()
		if err == nil && m.buf != nil {
			m.buf.free() // nobody reads a written message's data
		}
		if m.written != nil {
			m.err = err
			close(m.written)
		}
		if err != nil {
			s.close(err)
		}
	}
}

// next pops the first message still queued, or returns nil. Called with
// s.mu held.
func (s *sendQueue) next() *outMsg {
	for len(s.q) > 0 {
		m := s.q[0]
		s.q[0] = nil
		switch {
		case len(s.q) == 1 && cap(s.q) <= reuseQueue:
			s.q = s.q[:0] // the next message goes into the same array
		case len(s.q) == 1:
			s.q = nil // let a burst's backing array go
		default:
			s.q = s.q[1:]
		}
		switch {
		case m.state != msgQueued:
			s.withdrawn--
		case m.ctx != nil && m.ctx.Err() != nil:
			// Its caller's ctx ended while it was queued: never sent,
			// though the caller may not have run to withdraw it yet.
			err := m.ctx.Err()
			s.drop(m)
			if m.written != nil {
				m.err = err
				close(m.written)
			}
		default:
			return m
		}
	}
	return nil
}

// flush waits until everything queued so far has been written, or ctx or
// the connection ends.
func (s *sendQueue) flush(ctx context.Context) error {
	s.mu.Lock()
	if len(s.q) == 0 && (!s.running || s.waiting) || s.closed != nil {
		s.mu.Unlock()
		return nil
	}
	if s.flushed == nil {
		s.flushed = make(chan struct{})
	}
	ch := s.flushed
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-s.p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close fails what is queued with err; nothing more is taken.
func (s *sendQueue) close(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed == nil {
		s.closed = err
	}
	for _, m := range s.q {
		if m != nil && m.state == msgQueued {
			m.state = msgWithdrawn
			if m.written != nil {
				m.err = s.closed
				close(m.written)
			}
		}
	}
	s.q, s.withdrawn = nil, 0
	s.bytes, s.ctlBytes = 0, 0
	if s.room != nil {
		close(s.room)
		s.room = nil
	}
	if s.flushed != nil {
		close(s.flushed)
		s.flushed = nil
	}
}

// readOf is the ordinal of the inbound message (see Router) whose handler
// ctx is or derives from, or 0. It looks only when the Conn is a Router.
func (p *Peer) readOf(ctx context.Context) uint64 {
	if p.router == nil || ctx == nil {
		return 0
	}
	if h := p.inbound.handlerOf(ctx); h != nil {
		return h.read
	}
	return 0
}

// checkSize refuses a message of n bytes that the Conn's Limiter says is
// too long: the remote side would refuse it with an error naming no call,
// so the caller is told at once instead.
func (p *Peer) checkSize(n int) error {
	if p.maxMsg > 0 && n > p.maxMsg {
		return fmt.Errorf("%w: %d bytes to send, over the connection's limit of %d", ErrMessageTooLarge, n, p.maxMsg)
	}
	return nil
}

// writeConn writes one message to the Conn, within Options.WriteTimeout,
// with WriteFor if the Conn is a Router. Only the writer calls it. A failed
// write ends the connection; the error returned is then the Peer's closed
// error.
func (p *Peer) writeConn(msg []byte, read uint64) error {
	if p.endErr.Load() != nil { // ending: nothing more goes out
		return p.closedErr()
	}
	if p.opts.WriteTimeout > 0 {
		t := time.AfterFunc(p.opts.WriteTimeout, func() {
			p.end(fmt.Errorf("%w after %v: %w", ErrWriteTimeout, p.opts.WriteTimeout, context.DeadlineExceeded))
		})
		defer t.Stop()
	}
	var err error
	if p.router != nil {
		err = p.router.WriteFor(msg, read)
	} else {
		err = p.conn.Write(msg)
	}
	if err != nil {
		p.end(p.writeFailure(err))
		return p.closedErr()
	}
	return nil
}
