package httprpc

import (
	"bytes"
	"context"
	"net/http"
)

// A dialled connection's POSTs. Each message the Peer writes is a POST.
// One that holds calls takes one of MaxInFlight slots (unless a handler of
// ours makes it while serving the server's request) and its response is
// read by a goroutine of its own, for as long as its replies take; calls
// past MaxInFlight wait in order in a queue, for as long as their callers
// wait. Replies and notifications take no slot and never wait behind
// calls; their responses are read within noCallTimeout, by at most
// maxDrains goroutines.

// postStream is the response of a POST holding calls: the ids still
// awaiting their reply (under clientConn.mu) and what abandons it.
type postStream struct {
	ctx    context.Context // its requests' (the POST's and resumptions'), ended by cancel
	cancel context.CancelFunc
	left   map[string]struct{} // ids whose reply has not come
	slot   bool                // it holds a MaxInFlight slot
}

// done reports whether every request of ps has its reply, or ps was
// abandoned.
func (c *clientConn) done(ps *postStream) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(ps.left) == 0 || ps.ctx.Err() != nil
}

// queuedCall is a POST of calls: its body, their ids, what it carries (for
// errors), and the attempts answered 429 or 503 so far.
type queuedCall struct {
	body     []byte
	ids      []string
	what     string
	attempts int
}

// WriteFor POSTs msg. A reply or a notification is posted at once, and
// WriteFor returns once the response's headers are in, so that the server
// receives the messages in the order of the writes. A call is posted so
// too when a MaxInFlight slot is free and no call waits before it, or
// when a handler of ours makes it (read is not 0: the server's call may
// be waiting for it), else it waits in the queue and WriteFor returns at
// once. A cancel notification (the Peer's Cancel dialect, or Dial's own)
// abandons the stream of the call it names, or takes that call out of the
// queue unsent.
func (c *clientConn) WriteFor(msg []byte, read uint64) error {
	if id, ok := cancelTarget(msg, c.dialect); ok {
		if c.abandon(id) || c.own {
			return nil // never sent, or Dial's own notice: nobody to tell
		}
	}
	ids := requestIDs(msg)
	if len(ids) == 0 {
		return c.postNoCall(bytes.Clone(msg), describeNoCall(msg))
	}
	method := requestMethod(msg)
	q := &queuedCall{body: bytes.Clone(msg), ids: ids, what: describeCalls(method, len(ids))}
	c.mu.Lock()
	if c.cause != nil {
		c.mu.Unlock()
		return c.cause
	}
	if method == "initialize" {
		c.initID = ids[0]
	}
	nested := read != 0
	if !nested && (len(c.queue) > 0 || c.inFlight >= c.opts.MaxInFlight) {
		c.queue = append(c.queue, q)
		c.queued += len(q.body)
		c.mu.Unlock()
		return nil
	}
	if !nested {
		c.inFlight++
	}
	c.mu.Unlock()
	return c.call(q, c.track(q.ids, !nested))
}

// Write is WriteFor for a message that belongs to no request of the
// server's.
func (c *clientConn) Write(msg []byte) error { return c.WriteFor(msg, 0) }

// call posts q, whose stream ps is, and returns once the response's
// headers are in: a goroutine of the connection's reads the response.
// One answered 429 or 503 is sent again, by such a goroutine, after the
// server's Retry-After (at most maxRetryAfter) or RetryDelay doubled, for
// as long as its caller waits (its call is abandoned when the caller
// gives up); meanwhile it keeps its slot.
func (c *clientConn) call(q *queuedCall, ps *postStream) error {
	resp, err := c.post(ps.ctx, q.body)
	switch {
	case err != nil && ps.ctx.Err() != nil && c.ctx.Err() == nil:
		c.untrack(ps) // abandoned (its call given up) before the headers came
		return nil
	case err != nil:
		c.untrack(ps)
		return c.transportError("POST "+q.what, err)
	}
	if d, ok := c.transient(resp, q.attempts); ok {
		q.attempts++
		if !c.goOwned(func() {
			if c.sleep(d, ps) {
				_ = c.call(q, ps)
			} else {
				c.untrack(ps)
			}
		}) {
			c.untrack(ps)
		}
		return nil
	}
	if resp.StatusCode/100 != 2 {
		err := c.refusal(resp, http.MethodPost, q.what)
		c.fail(err)
		c.untrack(ps)
		return err
	}
	c.learnSession(resp)
	if !c.goOwned(func() {
		defer c.untrack(ps)
		c.readResponse(resp, ps)
	}) {
		resp.Body.Close()
		c.untrack(ps)
		return c.cause
	}
	return nil
}

// post sends a POST of body with ctx and returns the response, whatever
// its status, once its headers are in.
func (c *clientConn) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := c.request(ctx, http.MethodPost, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return c.hc.Do(req)
}

// track returns the postStream of a POST holding ids, each awaiting its
// reply; slot says it holds a MaxInFlight slot.
func (c *clientConn) track(ids []string, slot bool) *postStream {
	ctx, cancel := context.WithCancel(c.ctx)
	ps := &postStream{ctx: ctx, cancel: cancel, left: make(map[string]struct{}, len(ids)), slot: slot}
	c.mu.Lock()
	for _, id := range ids {
		ps.left[id] = struct{}{}
		c.awaiting[id] = ps
	}
	c.mu.Unlock()
	return ps
}

// untrack forgets ps once its response is done with, gives its slot back
// (if it held one) and posts the next queued call.
func (c *clientConn) untrack(ps *postStream) {
	ps.cancel()
	c.mu.Lock()
	for id := range ps.left {
		if c.awaiting[id] == ps {
			delete(c.awaiting, id)
		}
	}
	var next *queuedCall
	if ps.slot {
		ps.slot = false
		c.inFlight--
		if len(c.queue) > 0 && c.cause == nil {
			next = c.queue[0]
			c.queue[0] = nil
			c.queue = c.queue[1:]
			c.queued -= len(next.body)
			c.inFlight++
		}
	}
	c.mu.Unlock()
	if next != nil {
		// On this goroutine, which the connection owns: the queued call
		// goes in order, after those before it.
		_ = c.call(next, c.track(next.ids, true))
	}
}

// answered records the replies to ids: a POST stream whose requests all
// have theirs is done (and abandoned if it is not the one that carried
// them).
func (c *clientConn) answered(ids []string, on *postStream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		ps := c.awaiting[id]
		if ps == nil {
			continue
		}
		delete(c.awaiting, id)
		delete(ps.left, id)
		if len(ps.left) == 0 && ps != on {
			ps.cancel()
		}
	}
}

// abandon stops waiting for the reply to the call id, which the Peer gave
// up: it leaves the queue (a batch, once each of its calls is given up),
// and it reports true (it was never sent); a POST stream whose requests
// are all abandoned or answered ends, giving its slot back.
func (c *clientConn) abandon(id string) (unsent bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, q := range c.queue {
		j := index(q.ids, id)
		if j < 0 {
			continue
		}
		if q.ids = append(q.ids[:j:j], q.ids[j+1:]...); len(q.ids) == 0 {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			c.queued -= len(q.body)
		}
		return true
	}
	if id == c.initID {
		c.initID = "" // the standalone stream opens with the next response
	}
	ps := c.awaiting[id]
	if ps == nil {
		return false
	}
	delete(c.awaiting, id)
	delete(ps.left, id)
	if len(ps.left) == 0 {
		ps.cancel()
	}
	return false
}

// index returns where id is in ids, or -1.
func index(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}
