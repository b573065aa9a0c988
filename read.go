package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// readLoop reads messages until the connection ends. It routes replies to
// the pending table, answers malformed input, and hands requests to the
// dispatcher. It never runs user code and never waits for a write; it waits
// for a handler only to make room for a notification, and only while none
// of this Peer's calls awaits a reply (see dispatcher.waitForNotes).
func (p *Peer) readLoop() {
	defer p.wg.Done()
	defer close(p.readDone)
	defer func() {
		p.mu.Lock()
		p.readStopped = true
		p.mu.Unlock()
	}()
	for {
		data, err := p.conn.Read(p.ctx)
		if err != nil {
			if errors.Is(err, ErrMessageTooLarge) && p.ctx.Err() == nil {
				p.log.Warn("jsonrpc: incoming message too large", "err", err)
				e := errInvalidRequest()
				e.Data = appendQuote(nil, "message too large")
				p.replyNow(appendErrorResponse(nil, NullID(), e))
				continue
			}
			if errors.Is(err, io.EOF) {
				p.drain(err)
				return
			}
			p.end(fmt.Errorf("read failed: %w", err))
			return
		}
		p.route(data)
	}
}

// drain ends the Peer after the remote side ended its stream cleanly, once
// the inbound work already read has been served (see Options.DrainTimeout).
func (p *Peer) drain(eof error) {
	p.mu.Lock()
	p.eof = eof
	close(p.eofSeen)
	p.mu.Unlock()
	p.pending.close(fmt.Errorf("%w: %w", ErrClosed, eof)) // nobody will answer them
	if p.opts.DrainTimeout > 0 {
		t := time.NewTimer(p.opts.DrainTimeout)
		defer t.Stop()
		select {
		case <-p.inbound.drain():
		case <-p.done:
		case <-t.C:
			p.log.Warn("jsonrpc: handlers still running after the remote ended; cancelling them")
		}
	}
	p.end(eof)
}

// route handles one incoming message, element by element.
func (p *Peer) route(data []byte) {
	msgs, batch := p.decoder.decode(data)
	if batch && p.opts.MaxBatch > 0 && len(msgs) > p.opts.MaxBatch {
		e := errInvalidRequest()
		e.Data = appendQuote(nil, fmt.Sprintf("batch of %d exceeds the limit of %d", len(msgs), p.opts.MaxBatch))
		p.replyNow(appendErrorResponse(nil, NullID(), e))
		return
	}
	work := msgs[:0]
	var cancels []json.RawMessage
	for _, m := range msgs {
		switch {
		case m.resp != nil:
			p.receive(m)
		case m.invalid == nil && m.req.IsNotification() && m.req.Method == p.opts.CancelMethod:
			cancels = append(cancels, m.req.Params)
		default:
			work = append(work, m)
		}
	}
	if len(work) > 0 {
		p.dispatch(work, batch)
	}
	// After the work is taken, so that a cancel reaches a call in the
	// same batch as itself.
	for _, params := range cancels {
		p.inbound.cancel(params)
	}
}

// dispatch hands work to the dispatcher, or answers what it cannot take.
func (p *Peer) dispatch(work []message, batch bool) {
	for !p.inbound.submit(work, batch) {
		if batch || !work[0].req.IsNotification() || work[0].invalid != nil || !p.inbound.waitForNotes() {
			p.overloaded(work, batch)
			return
		}
	}
}

// receive delivers a reply to the call waiting for it, or logs why not.
func (p *Peer) receive(m message) {
	switch {
	case m.invalid != nil:
		p.log.Warn("jsonrpc: dropped a malformed response", "id", m.resp.ID.raw, "why", m.invalid.Message)
	case !p.pending.deliver(m.resp):
		p.log.Warn("jsonrpc: dropped a response nobody waits for", "id", m.resp.ID.raw)
	}
}

// overloaded answers work that the dispatcher did not take (its queue is
// full, or the Peer is shutting down): each call gets the rejection error,
// invalid elements their own error; notifications are dropped, since
// nothing can be answered to them.
func (p *Peer) overloaded(work []message, batch bool) {
	var out []byte
	n := 0
	for _, m := range work {
		e := m.invalid
		if e == nil {
			if m.req.IsNotification() {
				p.log.Warn("jsonrpc: inbound queue full, dropped a notification", "method", m.req.Method)
				continue
			}
			e = p.inbound.rejection()
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = appendErrorResponse(out, m.req.ID, e)
		n++
	}
	if n > 0 && batch {
		out = append(append([]byte{'['}, out...), ']')
	}
	if n > 0 {
		p.replyNow(out)
	}
}

// maxBacklog bounds the bytes of read-loop replies waiting to be written.
const maxBacklog = 1 << 20

// replyNow queues a reply from the read loop (a refusal, or the answer to a
// message too large or a batch too long) in the backlog, which another
// goroutine writes. The read loop never writes itself: two Peers whose read
// loops both waited to write their refusals to each other would both stop
// reading, for good. Should the remote side leave maxBacklog bytes of
// replies unread, more are dropped and logged rather than held.
func (p *Peer) replyNow(msg []byte) {
	if !p.backlog.push(p, msg, 0, maxBacklog) {
		p.log.Warn("jsonrpc: the remote side does not read its replies; dropped one", "bytes", len(msg))
	}
}

// cancelID returns the id named by cancel params {"id": ID}.
func cancelID(params json.RawMessage) (ID, bool) {
	var c struct {
		ID *ID `json:"id"`
	}
	if json.Unmarshal(params, &c) != nil || c.ID == nil {
		return ID{}, false
	}
	return *c.ID, true
}
