package httprpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"
)

// maxRetryDelay caps the delay between resumption attempts.
const maxRetryDelay = 5 * time.Second

// readResponse reads a POST's response: a JSON reply, or an event stream
// (resumed if cut), or nothing (202).
func (c *clientConn) readResponse(resp *http.Response, wantReply bool) {
	defer resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "text/event-stream":
		c.readStream(resp, wantReply)
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.opts.MaxMessageSize)+1))
		switch {
		case err != nil:
			c.transportError("read a reply", err)
		case len(data) > c.opts.MaxMessageSize:
			c.fail(fmt.Errorf("httprpc: a reply over %d bytes: %w", c.opts.MaxMessageSize, errEventTooLarge))
		case len(bytes.TrimSpace(data)) > 0:
			c.deliver(data)
		}
	default:
		n, _ := io.Copy(io.Discard, io.LimitReader(resp.Body, 1))
		if n > 0 {
			c.fail(fmt.Errorf("httprpc: a reply of type %q, not JSON or an event stream", mt))
		}
	}
}

// standalone reads the session's standalone stream, resuming it when it
// ends, until the connection ends. A server that answers 405 has none.
func (c *clientConn) standalone() {
	resp, err := c.get("")
	if err != nil || resp == nil {
		return
	}
	c.readStream(resp, false)
}

// get sends a GET for the standalone stream, or to resume the stream
// lastID names. It returns a nil response and a nil error for 405; an
// error for a failure of the transport (which may be retried); and for
// any other failure an error it has ended the connection with.
func (c *clientConn) get(lastID string) (*http.Response, error) {
	req, err := c.request(http.MethodGet, nil)
	if err != nil {
		c.fail(err)
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set(lastEventIDHeader, lastID)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("httprpc: failed to GET: %w", err) // retried
	}
	switch resp.StatusCode {
	case http.StatusMethodNotAllowed:
		resp.Body.Close()
		return nil, nil
	case http.StatusGone:
		resp.Body.Close()
		err := fmt.Errorf("%w: the server no longer keeps the events after %q", ErrStreamLost, lastID)
		c.fail(err)
		return nil, err
	}
	if err := c.checkStatus(resp, "GET"); err != nil {
		return nil, err
	}
	return resp, nil
}

// readStream delivers the messages of an event stream until it has
// carried its reply (a POST's, when post) or, for the standalone stream,
// until the connection ends. A stream that ends before is resumed (see
// resume).
func (c *clientConn) readStream(resp *http.Response, post bool) {
	var lastID string
	failures := 0 // attempts since the last event came
	for {
		r := newSSEReader(resp.Body, c.opts.MaxMessageSize)
		r.lastID = lastID
		replied, err := c.readEvents(r, post)
		resp.Body.Close()
		lastID = r.lastID
		if r.events > 0 {
			failures = 0
		}
		if replied || c.ended() {
			return
		}
		if errors.Is(err, errEventTooLarge) {
			c.fail(err)
			return
		}
		if resp = c.resume(lastID, post, &failures, err); resp == nil {
			return
		}
	}
}

// resume reopens a stream that was cut (why) after event lastID: a GET
// with Last-Event-ID, after a delay that doubles with each failure, at most
// MaxRetries times in a row. It returns nil when it gives up (the
// connection ended with ErrStreamLost), when the connection has ended, or
// when the server has no standalone stream (405). A POST's stream that
// brought no id cannot be resumed.
func (c *clientConn) resume(lastID string, post bool, failures *int, why error) *http.Response {
	for {
		if post && lastID == "" || c.opts.MaxRetries < 0 || *failures >= c.opts.MaxRetries {
			c.fail(fmt.Errorf("%w (last event id %q, %d attempts): %v", ErrStreamLost, lastID, *failures, why))
			return nil
		}
		if !c.sleep(backoff(c.opts.RetryDelay, *failures)) {
			return nil
		}
		*failures++
		resp, err := c.get(lastID)
		if resp != nil {
			return resp
		}
		if err == nil || c.ended() {
			return nil
		}
		why = err
	}
}

// readEvents delivers r's events until it fails or ends, and reports
// whether a reply came (always false unless post).
func (c *clientConn) readEvents(r *sseReader, post bool) (replied bool, err error) {
	for {
		data, _, err := r.next()
		if err != nil {
			return replied, err
		}
		if post && isReply(data) {
			replied = true
		}
		if !c.deliver(data) {
			return replied, nil
		}
	}
}

// ended reports whether the connection has ended.
func (c *clientConn) ended() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// sleep waits d, or reports false when the connection ends first.
func (c *clientConn) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.closed:
		return false
	}
}

// backoff is the delay before attempt n+1: first, doubled n times, capped.
func backoff(first time.Duration, n int) time.Duration {
	d := first
	for range n {
		if d *= 2; d >= maxRetryDelay {
			return maxRetryDelay
		}
	}
	return d
}
