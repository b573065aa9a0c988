package jsonrpc

import (
	"context"
	"errors"
)

// BatchElem is one element of an outgoing batch.
type BatchElem struct {
	Method string
	// Params are as for Call: nil, or a value that marshals to a JSON
	// object or array.
	Params any
	// Notification makes the element a notification: no reply is awaited.
	Notification bool
	// Result, if not nil, receives the element's unmarshalled result.
	Result any
	// Error is set by Batch: the element's *Error reply, or why its result
	// could not be unmarshalled.
	Error error
}

// ErrEmptyBatch is returned by Batch for a batch with no elements, which the
// specification does not allow.
var ErrEmptyBatch = errors.New("jsonrpc: empty batch")

// Batch sends elems as one JSON array and waits for the replies to its calls,
// which are matched by id whatever order they come back in. Each element's
// outcome is in its Error and Result; Batch itself fails only if the batch
// could not be sent or the wait was cut short by ctx or the end of the
// connection, in which case outstanding elements are forgotten (and
// cancelled, as for Call). A batch of notifications only returns once
// written.
func (p *Peer) Batch(ctx context.Context, elems []BatchElem) error {
	if len(elems) == 0 {
		return ErrEmptyBatch
	}
	ids := make([]ID, len(elems))
	chans := make([]<-chan *Response, len(elems))
	msg := []byte{'['}
	for i := range elems {
		e := &elems[i]
		raw, err := marshalParams(e.Params)
		if err != nil {
			p.forgetAll(ids)
			return err
		}
		if !e.Notification {
			ids[i] = p.newID()
			if chans[i], err = p.pending.add(ids[i]); err != nil {
				p.forgetAll(ids)
				return err
			}
		}
		if i > 0 {
			msg = append(msg, ',')
		}
		msg = appendRequest(msg, ids[i], e.Method, raw)
	}
	msg = append(msg, ']')
	if err := p.write(ctx, msg); err != nil {
		p.forgetAll(ids)
		return err
	}
	defer p.inbound.park(ctx)() // as in Call
	for i, ch := range chans {
		if ch == nil {
			continue
		}
		select {
		case resp := <-ch:
			if resp == nil {
				return p.closedErr()
			}
			elems[i].Error = p.outcome(resp, elems[i].Result)
		case <-ctx.Done():
			p.sendCancel(p.forgetAll(ids[i:])...)
			return ctx.Err()
		}
	}
	return nil
}

// forgetAll forgets the pending calls among ids and returns those that were
// still pending.
func (p *Peer) forgetAll(ids []ID) []ID {
	var forgotten []ID
	for _, id := range ids {
		if !id.IsZero() && p.pending.forget(id) {
			forgotten = append(forgotten, id)
		}
	}
	return forgotten
}
