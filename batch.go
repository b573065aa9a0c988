package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
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
// outcome is in its Error and Result (a malformed reply makes its element's
// Error an *InvalidResponseError); Batch itself fails only if the batch
// could not be sent or the wait was cut short by ctx or the end of the
// connection, in which case the elements answered by then keep their
// outcomes, and the others are forgotten (and cancelled, as for Call, if
// they had been sent). A batch of notifications only returns once written.
//
// With interceptors, each element passes through them on a goroutine of its
// own. The elements that reach the end of the chain together are written
// as one array: once every element has arrived or been refused, or once
// none has for 2 ms (an interceptor holding an element back, such
// as a concurrency limit, whose slot an element already sent must first
// give back). An element that arrives later goes in a later array, so an
// interceptor that limits concurrency slows a batch but cannot deadlock it.
// Elements reach the wire in the order they leave the interceptors: an
// interceptor that holds a notification back lets the batch's later
// notifications go first. (Making them wait for it instead would let a
// concurrency limit deadlock the batch.) Send notifications that must keep
// their order through interceptors that do not delay them, or one Notify
// at a time.
func (p *Peer) Batch(ctx context.Context, elems []BatchElem) error {
	if ctx == nil {
		return ErrNilContext
	}
	if len(elems) == 0 {
		return ErrEmptyBatch
	}
	if len(elems) > p.opts.MaxBatch {
		return fmt.Errorf("%w: %d elements, the limit is %d", ErrBatchTooLarge, len(elems), p.opts.MaxBatch)
	}
	b := &outBatch{p: p, elems: elems, ids: p.newIDs(elems)}
	if len(p.opts.Interceptors) == 0 {
		return b.run(ctx) // params are marshalled in place
	}
	b.params = make([]json.RawMessage, len(elems))
	for i := range elems {
		raw, err := marshalParams(elems[i].Params)
		if err != nil {
			return err
		}
		b.params[i] = raw
	}
	return b.runIntercepted(ctx)
}

// newIDs returns fresh ids for the calls among elems (the zero ID for the
// notifications), their texts sharing one string.
func (p *Peer) newIDs(elems []BatchElem) []ID {
	ids := make([]ID, len(elems))
	n := 0
	for i := range elems {
		if !elems[i].Notification {
			n++
		}
	}
	if n == 0 {
		return ids
	}
	last := p.nextID.Add(int64(n))
	first := last - int64(n) + 1
	text := make([]byte, 0, n*len(strconv.FormatInt(last, 10)))
	ends := make([]int, 0, n)
	for k := first; k <= last; k++ {
		text = strconv.AppendInt(text, k, 10)
		ends = append(ends, len(text))
	}
	all := string(text)
	start, k := 0, 0
	for i := range elems {
		if !elems[i].Notification {
			ids[i] = ID{raw: all[start:ends[k]]}
			start = ends[k]
			k++
		}
	}
	return ids
}

// batchGather is how long the elements of an intercepted Batch that have
// reached the wire wait for their siblings before they go without them.
const batchGather = 2 * time.Millisecond

// outBatch is one outgoing batch on its way.
type outBatch struct {
	p      *Peer
	elems  []BatchElem
	ids    []ID // zero for notifications
	params []json.RawMessage
	chans  []chan response // set by send for the calls sent
}

// send registers the calls among the elements idx and queues them as one
// array. It returns the queued message (nil when idx is empty).
func (b *outBatch) send(ctx context.Context, idx []int) (*outMsg, error) {
	if len(idx) == 0 {
		return nil, nil
	}
	for _, i := range idx { // by index: other goroutines set elems[i].Error
		if !b.ids[i].IsZero() {
			ch, err := b.p.pending.add(b.ids[i], nil)
			if err != nil {
				b.p.forgetAll(b.idsOf(idx))
				return nil, err
			}
			b.chans[i] = ch
		}
	}
	ids := b.idsOf(idx)
	m, err := b.p.out.enqueue(&outgoing{data: b.encode(nil, idx), ctx: ctx, written: true, read: b.p.readOf(ctx), ids: ids})
	if err != nil {
		b.p.forgetAll(ids)
		return nil, err
	}
	return m, nil
}

// encode appends the array of the elements idx to msg.
func (b *outBatch) encode(msg []byte, idx []int) []byte {
	n := 2
	for _, i := range idx {
		n += envelopeSize + len(b.ids[i].raw) + len(b.elems[i].Method) + len(b.params[i])
	}
	msg = append(slices.Grow(msg, n), '[')
	for _, i := range idx {
		if len(msg) > 1 {
			msg = append(msg, ',')
		}
		msg = appendRequest(msg, b.ids[i], b.elems[i].Method, b.params[i])
	}
	return append(msg, ']')
}

// encodeInPlace encodes the whole batch into a pooled buffer, marshalling
// each element's params in place.
func (b *outBatch) encodeInPlace() (*msgBuf, error) {
	mb := newMsgBuf()
	msg := append(mb.b, '[')
	for i := range b.elems {
		if i > 0 {
			msg = append(msg, ',')
		}
		var err error
		msg, err = appendParams(appendRequestHead(msg, b.ids[i], b.elems[i].Method), b.elems[i].Params)
		if err != nil {
			mb.b = msg
			mb.free()
			return nil, err
		}
		msg = append(msg, '}')
	}
	mb.b = append(msg, ']')
	return mb, nil
}

// idsOf returns the ids of the elements idx.
func (b *outBatch) idsOf(idx []int) []ID {
	ids := make([]ID, len(idx))
	for k, i := range idx {
		ids[k] = b.ids[i]
	}
	return ids
}

// written waits for m to be written when it holds notifications only, which
// nothing else would wait for.
func (b *outBatch) written(ctx context.Context, m *outMsg, idx []int) error {
	for _, i := range idx {
		if !b.ids[i].IsZero() {
			return nil // its replies will say
		}
	}
	b.p.out.watch(1)
	defer b.p.out.watch(-1)
	select {
	case <-m.written:
		return m.err
	case <-ctx.Done():
		b.p.out.withdraw(m)
		return ctx.Err()
	}
}

// wait waits for element i's reply, sent in m. When ctx ends first, the
// call is forgotten, and cancelled if m went out.
func (b *outBatch) wait(ctx context.Context, m *outMsg, i int) (response, error) {
	select {
	case resp, ok := <-b.chans[i]:
		return b.p.delivered(resp, ok)
	case <-ctx.Done():
		if !b.p.pending.forget(b.ids[i]) {
			resp, ok := <-b.chans[i]
			return b.p.delivered(resp, ok)
		}
		if !b.p.out.withdraw(m) {
			b.p.sendCancel(ctx, b.ids[i])
		}
		return response{}, ctx.Err()
	}
}

// run sends the batch and collects its replies. The calls wait in one
// group: the read loop fills it in, and run wakes once, when the last reply
// is in. When ctx or the connection ends first, the elements answered by
// then keep their outcomes.
func (b *outBatch) run(ctx context.Context) error {
	msg, err := b.encodeInPlace()
	if err != nil {
		return err
	}
	defer b.p.inbound.park(ctx)() // as in Call
	g, err := b.p.pending.addGroup(b.ids)
	if err != nil {
		msg.free()
		return err
	}
	m, err := b.p.out.enqueue(&outgoing{data: msg.b, buf: msg, ctx: ctx, written: true, read: b.p.readOf(ctx), group: g})
	if err != nil {
		msg.free()
		b.p.pending.forgetGroup(g, b.ids)
		return err
	}
	all := make([]int, len(b.elems))
	for i := range all {
		all[i] = i
	}
	if err := b.written(ctx, m, all); err != nil {
		return err
	}
	var cut error
	select {
	case <-g.done:
	case <-ctx.Done():
		if left := b.p.pending.forgetGroup(g, b.ids); len(left) > 0 {
			if !b.p.out.withdraw(m) {
				b.p.sendCancel(ctx, left...)
			}
			cut = ctx.Err()
		}
	}
	for i, resp := range g.resps {
		switch {
		case b.ids[i].IsZero():
		case resp == nil: // unanswered: forgotten, or the connection ended
			if cut == nil {
				cut = b.p.closedErr()
			}
		case resp.invalid != nil: // a malformed reply: this element's error
			b.elems[i].Error = resp.invalid
		default:
			b.elems[i].Error = decodeResult(resp, b.elems[i].Result, b.elems[i].Method)
		}
	}
	return cut
}

// round is one array of an intercepted batch: the elements that reached
// the wire together.
type round struct {
	idx     []int
	flushed bool          // being sent: who is in it is settled
	sent    chan struct{} // closed once queued (or failed)
	msg     *outMsg
	err     error
}

// gatherer forms the rounds of an intercepted batch.
type gatherer struct {
	b         *outBatch
	ctx       context.Context
	mu        sync.Mutex
	remaining int // elements not yet arrived or refused
	cur       *round
	timer     *time.Timer
}

// arrive records that element i reached the wire (joins) or was refused,
// and returns the round it joined.
func (g *gatherer) arrive(i int, joins bool) *round {
	g.mu.Lock()
	g.remaining--
	r := g.cur
	if joins {
		r.idx = append(r.idx, i)
	}
	switch {
	case g.remaining == 0:
		g.mu.Unlock()
		g.flush(r)
		return r
	case len(r.idx) > 0: // wait a moment for the others
		if g.timer == nil {
			g.timer = time.AfterFunc(batchGather, func() { g.flush(g.current()) })
		} else {
			g.timer.Reset(batchGather)
		}
	}
	g.mu.Unlock()
	return r
}

func (g *gatherer) current() *round {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cur
}

// flush sends round r, unless it is being sent already.
func (g *gatherer) flush(r *round) {
	g.mu.Lock()
	if r.flushed || len(r.idx) == 0 {
		g.mu.Unlock()
		return
	}
	r.flushed = true
	g.cur = &round{sent: make(chan struct{})}
	if g.timer != nil {
		g.timer.Stop()
	}
	g.mu.Unlock()
	slices.Sort(r.idx) // in the order of the elements, as without interceptors
	if r.err = g.ctx.Err(); r.err == nil {
		r.msg, r.err = g.b.send(g.ctx, r.idx)
	}
	close(r.sent)
}

// stop stops the gathering timer.
func (g *gatherer) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timer != nil {
		g.timer.Stop()
	}
}

// leave takes element i out of round r when its ctx ends before r is sent.
// It reports false once r is being sent with the element in it.
func (g *gatherer) leave(r *round, i int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.flushed {
		return false
	}
	r.idx = slices.DeleteFunc(r.idx, func(j int) bool { return j == i })
	return true
}

// runIntercepted runs each element through the interceptors on its own
// goroutine, and sends them in rounds (see Batch). It returns the error
// that sent nothing, else the first that cut the wait short.
func (b *outBatch) runIntercepted(ctx context.Context) error {
	b.chans = make([]chan response, len(b.elems))
	g := &gatherer{b: b, ctx: ctx, remaining: len(b.elems), cur: &round{sent: make(chan struct{})}}
	defer g.stop()
	defer b.p.inbound.park(ctx)()
	errs := make([]elemErr, len(b.elems))
	var wg sync.WaitGroup
	for i := range b.elems {
		wg.Add(1)
		go func() { // owned by Batch, which waits for it
			defer wg.Done()
			errs[i] = b.runElement(ctx, g, i)
		}()
	}
	wg.Wait()
	var first error
	for _, e := range errs {
		if e.send != nil {
			return e.send
		}
		// The batch's own failure, not an element's error reply: the
		// end of the connection, or of ctx.
		if first == nil && e.err != nil && (errors.Is(e.err, ErrClosed) || ctx.Err() != nil && errors.Is(e.err, ctx.Err())) {
			first = e.err
		}
	}
	return first
}

// elemErr is how an intercepted element ended: send if its round could not
// be sent, and its own error.
type elemErr struct{ send, err error }

// runElement runs element i through the interceptors; the end of the chain
// joins a round of g and waits for the element's reply. It sets the
// element's Error and Result.
func (b *outBatch) runElement(ctx context.Context, g *gatherer, i int) elemErr {
	var out elemErr
	arrived := false
	info := &CallInfo{Peer: b.p, Outbound: true, Method: b.elems[i].Method, ID: b.ids[i], Params: b.params[i]}
	v, err := b.p.intercept(ctx, info, func(ctx context.Context) (any, error) {
		if arrived {
			return nil, errors.New("jsonrpc: an interceptor called next twice in a batch")
		}
		arrived = true
		if err := checkParams(info.Params); err != nil {
			g.arrive(i, false)
			return nil, err
		}
		b.params[i] = info.Params // an interceptor may have rewritten them
		r := g.arrive(i, true)
		select {
		case <-r.sent:
		case <-ctx.Done():
			if g.leave(r, i) {
				return nil, ctx.Err()
			}
			<-r.sent // being queued, under a ctx that has ended: soon
		}
		switch {
		case r.err != nil:
			out.send = r.err
			return nil, r.err
		case b.ids[i].IsZero():
			return nil, b.written(ctx, r.msg, r.idx)
		}
		resp, err := b.wait(ctx, r.msg, i)
		return invokerResult(b.elems[i].Method, &resp, err)
	})
	if !arrived {
		g.arrive(i, false)
	}
	if err == nil && !b.ids[i].IsZero() {
		var raw json.RawMessage
		if raw, err = rawResult(v); err == nil {
			err = decodeResult(&response{Result: raw}, b.elems[i].Result, b.elems[i].Method)
		}
	}
	b.elems[i].Error = err
	out.err = err
	return out
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
