package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
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
	// could not be unmarshalled (or why an interceptor refused it).
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
//
// Each element passes through the Peer's interceptors on a goroutine of its
// own; the array holds the elements that they let through, and is written
// once every element has been let through or refused.
func (p *Peer) Batch(ctx context.Context, elems []BatchElem) error {
	if len(elems) == 0 {
		return ErrEmptyBatch
	}
	b := &outBatch{p: p, elems: elems, ids: make([]ID, len(elems)), params: make([]json.RawMessage, len(elems))}
	for i := range elems {
		raw, err := marshalParams(elems[i].Params)
		if err != nil {
			return err
		}
		b.params[i] = raw
		if !elems[i].Notification {
			b.ids[i] = p.newID()
		}
	}
	if len(p.opts.Interceptors) == 0 {
		return b.run(ctx)
	}
	return b.runIntercepted(ctx)
}

// outBatch is one outgoing batch on its way.
type outBatch struct {
	p      *Peer
	elems  []BatchElem
	ids    []ID // zero for notifications
	params []json.RawMessage
	chans  []chan *Response // set by send for the calls sent
}

// send registers the calls among the elements that join (all when join is
// nil) and writes them as one array. It reports whether it sent anything.
func (b *outBatch) send(ctx context.Context, join []bool) (bool, error) {
	b.chans = make([]chan *Response, len(b.elems))
	msg := []byte{'['}
	for i := range b.elems { // by index: other goroutines set elems[i].Error
		if join != nil && !join[i] {
			continue
		}
		if !b.ids[i].IsZero() {
			ch, err := b.p.pending.add(b.ids[i])
			if err != nil {
				b.p.forgetAll(b.ids)
				return false, err
			}
			b.chans[i] = ch
		}
		if len(msg) > 1 {
			msg = append(msg, ',')
		}
		msg = appendRequest(msg, b.ids[i], b.elems[i].Method, b.params[i])
	}
	if len(msg) == 1 {
		return false, nil // every element was refused
	}
	if err := b.p.write(ctx, append(msg, ']')); err != nil {
		b.p.forgetAll(b.ids)
		return false, err
	}
	return true, nil
}

// wait waits for element i's reply.
func (b *outBatch) wait(ctx context.Context, i int) (*Response, error) {
	select {
	case resp := <-b.chans[i]:
		return b.p.delivered(resp)
	case <-ctx.Done():
		if !b.p.pending.forget(b.ids[i]) {
			return b.p.delivered(<-b.chans[i])
		}
		b.p.sendCancel(b.ids[i])
		return nil, ctx.Err()
	}
}

// run sends the batch and collects its replies in order of the elements.
func (b *outBatch) run(ctx context.Context) error {
	if _, err := b.send(ctx, nil); err != nil {
		return err
	}
	defer b.p.inbound.park(ctx)() // as in Call
	for i := range b.elems {
		if b.chans[i] == nil {
			continue
		}
		resp, err := b.wait(ctx, i)
		if err != nil {
			if ctx.Err() != nil {
				b.p.sendCancel(b.p.forgetAll(b.ids[i+1:])...)
			}
			return err
		}
		b.elems[i].Error = decodeResult(resp, b.elems[i].Result)
	}
	return nil
}

// runIntercepted runs each element through the interceptors on its own
// goroutine. The elements that reach the end of the chain join the array;
// the last element to join or be refused writes it.
func (b *outBatch) runIntercepted(ctx context.Context) error {
	var (
		mu       sync.Mutex
		join     = make([]bool, len(b.elems))
		pending  = len(b.elems) // elements not yet joined or refused
		sending  bool           // the array is being built: who joined is settled
		sent     = make(chan struct{})
		sendErr  error
		firstErr error
		wg       sync.WaitGroup
	)
	arrive := func(i int, joins bool) {
		mu.Lock()
		join[i] = joins
		pending--
		last := pending == 0
		sending = last
		mu.Unlock()
		if !last {
			return
		}
		if sendErr = ctx.Err(); sendErr == nil {
			_, sendErr = b.send(ctx, join)
		}
		close(sent)
	}
	// leave takes an element that joined out of the array, when its ctx
	// ends before the array is sent. It reports false once the array is
	// being sent with the element in it.
	leave := func(i int) bool {
		mu.Lock()
		defer mu.Unlock()
		if sending {
			return false
		}
		join[i] = false
		return true
	}
	defer b.p.inbound.park(ctx)()
	for i := range b.elems {
		wg.Add(1)
		go func() { // owned by Batch, which waits for it
			defer wg.Done()
			arrived := false
			info := &CallInfo{Peer: b.p, Outbound: true, Method: b.elems[i].Method, ID: b.ids[i], Params: b.params[i]}
			v, err := b.p.intercept(info, func(ctx context.Context) (any, error) {
				if arrived {
					return nil, errors.New("jsonrpc: an interceptor called next twice in a batch")
				}
				arrived = true
				if err := checkParams(info.Params); err != nil {
					arrive(i, false)
					return nil, err
				}
				b.params[i] = info.Params // an interceptor may have rewritten them
				arrive(i, true)
				select {
				case <-sent:
				case <-ctx.Done():
					if leave(i) {
						return nil, ctx.Err()
					}
					<-sent // being written, under a ctx that has ended: soon
				}
				if sendErr != nil || b.ids[i].IsZero() {
					return nil, sendErr
				}
				return invokerResult(b.wait(ctx, i))
			})(ctx)
			if !arrived {
				arrive(i, false)
			}
			if err == nil {
				var raw json.RawMessage
				if raw, err = rawResult(v); err == nil && !b.ids[i].IsZero() {
					err = decodeResult(&Response{Result: raw}, b.elems[i].Result)
				}
			}
			b.elems[i].Error = err
			if err != nil && (errors.Is(err, ErrClosed) || ctx.Err() != nil) {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if sendErr != nil {
		return sendErr
	}
	return firstErr
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
