package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// readLoop reads messages until the connection ends. It routes replies to
// the pending table, answers malformed input, and hands requests to the
// dispatcher; it never runs user code and never waits for a handler.
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
			p.end(fmt.Errorf("read failed: %w", err))
			return
		}
		p.route(data)
	}
}

// route handles one incoming message, element by element.
func (p *Peer) route(data []byte) {
	msgs, batch := decodeMessage(data)
	if batch && p.opts.MaxBatch > 0 && len(msgs) > p.opts.MaxBatch {
		e := errInvalidRequest()
		e.Data = appendQuote(nil, fmt.Sprintf("batch of %d exceeds the limit of %d", len(msgs), p.opts.MaxBatch))
		p.replyNow(appendErrorResponse(nil, NullID(), e))
		return
	}
	work := msgs[:0]
	for _, m := range msgs {
		switch {
		case m.resp != nil:
			p.receive(m)
		case m.invalid == nil && m.req.IsNotification() && m.req.Method == p.opts.CancelMethod:
			p.inbound.cancel(m.req.Params)
		default:
			work = append(work, m)
		}
	}
	if len(work) == 0 {
		return
	}
	if !p.inbound.submit(work, batch) {
		p.overloaded(work, batch)
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

// replyNow writes a reply from the read loop.
func (p *Peer) replyNow(msg []byte) {
	_ = p.write(p.ctx, msg) // a failed write ends the Peer, which says why
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
