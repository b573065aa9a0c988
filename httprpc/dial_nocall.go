package httprpc

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// A dialled connection's POSTs of no call: replies to the server's
// requests and notifications. They take no MaxInFlight slot and never wait
// behind calls; each is posted in its place (the server reads them in
// order), bounded in time, and what their responses hold is read by a few
// goroutines at most.

// noCallTimeout bounds a POST that carries no call (replies,
// notifications): its response's headers must come within it, or the
// connection ends, and what its body holds is read within it, or the body
// is closed (a server that answers them with a stream that never ends
// holds nothing of ours for long). SessionServer answers them 202, at
// once or once its Peer has read them. (A variable for the tests that
// hold it.)
var noCallTimeout = 30 * time.Second

// maxDrains bounds the responses to POSTs of no call read at once past
// their headers (what a server may put there is read, at most 64 KiB, so
// that the connection is reused); past it a response with a body is
// closed unread, and its connection dropped.
const maxDrains = 4

// postNoCall posts body, which holds no call (what describes it), and
// returns once the response's headers are in; one answered 429 or 503 is
// sent again after Retry-After, MaxRetries times at most, before later
// messages (the server reads them in order).
func (c *clientConn) postNoCall(body []byte, what string) error {
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(c.ctx, noCallTimeout)
		resp, err := c.post(ctx, body)
		if err != nil {
			cancel()
			if ctx.Err() == context.DeadlineExceeded && c.ctx.Err() == nil {
				err = fmt.Errorf("%w (%v)", errNoAnswer, noCallTimeout)
			}
			return c.transportError("POST "+what, err)
		}
		if d, ok := c.transient(resp, attempt); ok && attempt < c.opts.MaxRetries {
			cancel()
			if !c.sleep(d, nil) {
				return c.cause
			}
			continue
		}
		if resp.StatusCode/100 != 2 {
			err := c.refusal(resp, http.MethodPost, what)
			cancel()
			c.fail(err)
			return err
		}
		c.learnSession(resp)
		c.finishNoCall(resp, cancel)
		return nil
	}
}

// finishNoCall reads what the response to a POST of no call holds (the
// transport says nothing: 202 with no body), within its ctx, whose
// cancel it calls once done.
func (c *clientConn) finishNoCall(resp *http.Response, cancel context.CancelFunc) {
	if resp.ContentLength == 0 {
		resp.Body.Close()
		cancel()
		return
	}
	c.mu.Lock()
	drain := c.drains < maxDrains
	if drain {
		c.drains++
	}
	c.mu.Unlock()
	if drain && c.goOwned(func() {
		defer func() {
			c.mu.Lock()
			c.drains--
			c.mu.Unlock()
		}()
		drainBody(resp.Body) // bounded in time by its request's ctx
		resp.Body.Close()
		cancel()
	}) {
		return
	}
	if drain {
		c.mu.Lock()
		c.drains--
		c.mu.Unlock()
	}
	resp.Body.Close() // unread: its connection goes
	cancel()
}
