package jsonrpc

import (
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
	wake     chan struct{} // wakes a lingering writer; 1-buffered
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
	buf     *msgBuf // data's pooled buffer, freed once written; or nil
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

// maxControlBytes bounds the read loop's replies and the cancel
// notifications waiting to be written.
const maxControlBytes = 1 << 20

func (s *sendQueue) init(p *Peer) {
	s.p = p
	s.max = p.opts.MaxOutboundBytes
	s.wake = make(chan struct{}, 1)
}

// enqueue queues data, waiting while the queue is over its budget (a
// message larger than the whole budget goes alone) until ctx or the
// connection ends. A nil ctx waits for the connection only; one that has
// already ended queues nothing. If written is true, the returned message's
// written channel will get the outcome. If buf is not nil, data is buf's,
// and buf is freed once data is written or withdrawn (not on an error:
// the caller still owns it then). read is the inbound message data belongs
// to, for a Router.
func (s *sendQueue) enqueue(ctx context.Context, data []byte, buf *msgBuf, written bool, read uint64) (*outMsg, error) {
	return s.enqueueCharged(ctx, data, buf, written, read, false)
}

// enqueueCharged is enqueue; with charge, data counts against the inbound
// budget while it waits for room (see sendReply).
func (s *sendQueue) enqueueCharged(ctx context.Context, data []byte, buf *msgBuf, written bool, read uint64, charge bool) (*outMsg, error) {
	if err := s.p.checkSize(len(data)); err != nil {
		return nil, err
	}
	if ctx != nil && ctx.Err() != nil {
		// Ended before it was queued: never sent, as the package doc
		// promises of a message still queued when its ctx ends.
		return nil, ctx.Err()
	}
	m := &outMsg{data: data, buf: buf, read: read}
	if written {
		m.written = make(chan struct{})
	}
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	s.mu.Lock()
	for s.closed == nil && s.bytes > 0 && s.bytes+len(data) > s.max {
		if s.room == nil {
			s.room = make(chan struct{})
		}
		room := s.room
		s.waiters++
		s.mu.Unlock()
		if charge {
			s.p.inbound.charge(len(data))
			defer s.p.inbound.uncharge(len(data))
			charge = false
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
	s.bytes += len(data)
	start := s.push(m)
	s.mu.Unlock()
	s.start(start)
	return m, nil
}

// send writes data in the writer's place (see direct) when ctx can never
// end, and queues it otherwise, as enqueue does. A nil ctx is one that
// never ends. The returned message is nil when data was written in place;
// seq is its place in the order of messages either way.
func (s *sendQueue) send(ctx context.Context, data []byte, buf *msgBuf, written bool, read uint64) (m *outMsg, seq uint64, err error) {
	if err := s.p.checkSize(len(data)); err != nil {
		return nil, 0, err
	}
	if ctx == nil || ctx.Done() == nil {
		if ok, seq, err := s.direct(data, buf, read); ok {
			return nil, seq, err
		}
	}
	if m, err = s.enqueue(ctx, data, buf, written, read); err != nil {
		return nil, 0, err
	}
	return m, m.seq, nil
}

// sendReply sends a handler's reply to a call sent alone, buf, for the
// inbound message read, as send does with no ctx. While it waits for room
// in the outbound queue its bytes count against the inbound budget
// (Options.MaxQueuedBytes), as a batch's replies do until their arrays
// are queued: the call is still being served, and a remote side that
// does not read its replies must not make this side hold them beyond the
// budget (new calls are refused meanwhile).
func (s *sendQueue) sendReply(buf *msgBuf, read uint64) {
	if ok, _, _ := s.direct(buf.b, buf, read); ok {
		return
	}
	_, _ = s.enqueueCharged(nil, buf.b, buf, false, read, true)
}

// sendBuf sends buf's message, as send does.
func (s *sendQueue) sendBuf(ctx context.Context, buf *msgBuf, written bool, read uint64) (*outMsg, uint64, error) {
	return s.send(ctx, buf.b, buf, written, read)
}

// direct writes data on the calling goroutine, as the writer would, when
// nothing is queued and nobody writes, and reports whether it did (and the
// write's error). It is for callers that have no ctx to honour (a runner's
// reply, a call with a ctx that never ends), which may wait for the Conn:
// it saves the hand-over to the writer goroutine. The caller counts as
// waiting for a write meanwhile (see blocked). seq is the message's place
// in the order of messages.
func (s *sendQueue) direct(data []byte, buf *msgBuf, read uint64) (ok bool, seq uint64, err error) {
	s.mu.Lock()
	if s.running || len(s.q) > 0 || s.closed != nil {
		s.mu.Unlock()
		return false, 0, nil
	}
	s.running = true // holds the writer's place: others queue behind
	s.watchers++
	s.bytes += len(data)
	s.seq++
	seq = s.seq
	s.mu.Unlock()

	err = s.p.writeConn(data, read)

	s.mu.Lock()
	s.watchers--
	s.releaseBytes(len(data), false)
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
	} else if buf != nil {
		buf.free()
	}
	return true, seq, err
}

// control queues data (belonging to the inbound message read) without
// waiting, within maxControlBytes. It reports false if the message did not
// fit or the connection has ended.
func (s *sendQueue) control(data []byte, read uint64) bool {
	s.mu.Lock()
	if s.closed != nil || s.ctlBytes > 0 && s.ctlBytes+len(data) > maxControlBytes {
		s.mu.Unlock()
		return false
	}
	s.ctlBytes += len(data)
	start := s.push(&outMsg{data: data, control: true, read: read})
	s.mu.Unlock()
	s.start(start)
	return true
}

// push appends m and reports whether a writer must be started. Called with
// s.mu held.
func (s *sendQueue) push(m *outMsg) (start bool) {
	s.seq++
	m.seq = s.seq
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
// reach the wire. A withdrawn message lets go of its bytes at once, not
// when the writer comes to it: behind a write that does not return, the
// callers that leave would otherwise fill the heap with what they gave
// back to the budget. Its place in the queue goes too, once withdrawn
// messages are half the queue.
func (s *sendQueue) withdraw(m *outMsg) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.state != msgQueued {
		return m.state == msgWithdrawn
	}
	m.state = msgWithdrawn
	s.release(m)
	if m.buf != nil {
		m.buf.free()
	}
	m.data, m.buf = nil, nil
	if s.withdrawn++; s.withdrawn > compactAfter && s.withdrawn > len(s.q)/2 {
		s.compact()
	}
	return true
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
func (s *sendQueue) release(m *outMsg) { s.releaseBytes(len(m.data), m.control) }

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
			s.waiting = true
			s.mu.Unlock()
			expired := false
			select {
			case <-s.wake:
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
		if m.state == msgQueued {
			return m
		}
		s.withdrawn--
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
