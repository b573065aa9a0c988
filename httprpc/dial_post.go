package httprpc

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
)

// A dialled connection's POSTs. Each message the Peer writes is a POST;
// the response of one that holds requests is read by a goroutine of its
// own, for as long as its replies take (MaxInFlight of them at once).
// Replies and notifications take no slot and never wait behind calls.

// postStream is the response of a POST holding requests: the ids still
// awaiting their reply (under clientConn.mu) and what abandons it.
type postStream struct {
	ctx    context.Context // its requests' (the POST's and resumptions'), ended by cancel
	cancel context.CancelFunc
	left   map[string]struct{} // ids whose reply has not come
}

// done reports whether every request of ps has its reply, or ps was
// abandoned.
func (c *clientConn) done(ps *postStream) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(ps.left) == 0 || ps.ctx.Err() != nil
}

// queuedCall is a call waiting for a MaxInFlight slot.
type queuedCall struct {
	body []byte
	ids  []string
}

// Write POSTs msg. A reply or a notification is posted at once, and Write
// returns once the response's headers are in, so that the server receives
// the messages in the order of the writes; a call is posted so too when a
// MaxInFlight slot is free and no call waits before it, else it waits in
// the queue and Write returns at once. A cancel notification (the Peer's
// Cancel dialect) abandons the stream of the call it names, or takes that
// call out of the queue unsent.
func (c *clientConn) Write(msg []byte) error {
	if id, ok := cancelTarget(msg, c.opts.Peer.Cancel); ok && c.abandon(id) {
		return nil // the call never went: nobody to tell
	}
	ids := requestIDs(msg)
	if len(ids) == 0 {
		return c.post(bytes.Clone(msg), nil)
	}
	c.mu.Lock()
	if c.cause != nil {
		c.mu.Unlock()
		return c.cause
	}
	if len(c.queue) > 0 || c.inFlight >= c.opts.MaxInFlight {
		if c.queued+len(msg) > c.maxQueued && len(c.queue) > 0 {
			err := fmt.Errorf("httprpc: calls waiting for one of MaxInFlight (%d) slots would pass %d bytes: raise MaxInFlight or Peer.MaxOutboundBytes", c.opts.MaxInFlight, c.maxQueued)
			c.mu.Unlock()
			c.fail(err)
			return err
		}
		c.queue = append(c.queue, &queuedCall{body: bytes.Clone(msg), ids: ids})
		c.queued += len(msg)
		c.mu.Unlock()
		return nil
	}
	c.inFlight++
	c.mu.Unlock()
	return c.post(bytes.Clone(msg), ids)
}

// post sends body, holding the requests ids (which hold a slot: see
// release), and returns once the response's headers are in; a goroutine
// reads the response.
func (c *clientConn) post(body []byte, ids []string) error {
	ps := c.track(ids)
	req, err := c.request(ps.ctx, http.MethodPost, bytes.NewReader(body))
	if err != nil {
		c.untrack(ps, ids)
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.hc.Do(req)
	if err == nil {
		err = c.checkStatus(resp, "POST")
	} else if ps.ctx.Err() != nil && c.ctx.Err() == nil {
		err = nil // abandoned (its call cancelled) before the headers came
	} else {
		err = c.transportError("POST", err)
	}
	if err != nil || resp == nil {
		c.untrack(ps, ids)
		return err
	}
	c.learnSession(resp)
	if !c.goOwned(func() {
		defer c.untrack(ps, ids)
		c.readResponse(resp, ps, len(ids) > 0)
	}) {
		resp.Body.Close()
		c.untrack(ps, ids)
		return c.cause
	}
	return nil
}

// track returns the postStream of a POST holding ids, each awaiting its
// reply.
func (c *clientConn) track(ids []string) *postStream {
	ctx, cancel := context.WithCancel(c.ctx)
	ps := &postStream{ctx: ctx, cancel: cancel, left: make(map[string]struct{}, len(ids))}
	c.mu.Lock()
	for _, id := range ids {
		ps.left[id] = struct{}{}
		c.awaiting[id] = ps
	}
	c.mu.Unlock()
	return ps
}

// untrack forgets ps once its response is done with, gives its slot back
// (if its POST held requests) and posts the next queued call.
func (c *clientConn) untrack(ps *postStream, ids []string) {
	ps.cancel()
	c.mu.Lock()
	for id := range ps.left {
		if c.awaiting[id] == ps {
			delete(c.awaiting, id)
		}
	}
	var next *queuedCall
	if len(ids) > 0 {
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
		_ = c.post(next.body, next.ids)
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

// abandon stops waiting for the reply to the call id, which the Peer
// cancelled: a queued call leaves the queue, and it reports true (it was
// never sent); a POST stream whose requests are all abandoned or answered
// ends, giving its slot back.
func (c *clientConn) abandon(id string) (unsent bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, q := range c.queue {
		if len(q.ids) == 1 && q.ids[0] == id {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			c.queued -= len(q.body)
			return true
		}
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
