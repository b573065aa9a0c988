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

// maxRetryDelay caps the delay between resumption attempts that the
// client chooses (a server's retry field is honoured as it is).
const maxRetryDelay = 5 * time.Second

// readResponse reads a POST's response: a JSON reply, or an event stream
// (resumed when it ends before its replies), or nothing (202). ps is the
// POST's stream; calls reports whether it holds requests (a response to
// anything else carries nothing the Peer needs).
func (c *clientConn) readResponse(resp *http.Response, ps *postStream, calls bool) {
	defer resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case !calls:
		drain(resp.Body) // 202 with no body, as the transport says
	case mt == "text/event-stream":
		c.readStream(resp, ps)
	case mt == "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.opts.MaxMessageSize)+1))
		switch {
		case ps.ctx.Err() != nil && c.ctx.Err() == nil:
			// abandoned: its call was cancelled
		case err != nil:
			c.transportError("read a reply", err)
		case len(data) > c.opts.MaxMessageSize:
			c.fail(fmt.Errorf("httprpc: a reply over %d bytes: %w", c.opts.MaxMessageSize, errEventTooLarge))
		case len(bytes.TrimSpace(data)) > 0:
			c.answered(replyIDs(data), ps)
			c.deliver(data, ps)
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
	resp, err := c.get(nil, "")
	if err != nil || resp == nil {
		return
	}
	c.readStream(resp, nil)
}

// errNoGET is get's answer to 405: the server has no GET streams.
var errNoGET = errors.New("httprpc: the server answers GET with 405 Method Not Allowed: it has no standalone stream and resumes none")

// get sends a GET for the standalone stream (ps nil), or to resume the
// stream that lastID names. It returns errNoGET for 405; a transport's
// error (which may be retried); and for any other failure an error it has
// ended the connection with.
func (c *clientConn) get(ps *postStream, lastID string) (*http.Response, error) {
	ctx := c.ctx
	if ps != nil {
		ctx = ps.ctx
	}
	req, err := c.request(ctx, http.MethodGet, nil)
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
		return nil, errNoGET
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
// carried every reply its POST awaits (ps) or, for the standalone stream
// (ps nil), until the connection ends. A stream that ends before is
// resumed with a GET bearing Last-Event-ID: after the delay the server's
// retry field asked for, or ours (RetryDelay, doubled after each attempt
// that brought nothing). A stream that ends cleanly, between events, is
// polling (SEP-1699): it is resumed as often as the server closes it. One
// cut mid-event, or a GET that fails, is a failure: MaxRetries of them in
// a row end the connection with ErrStreamLost.
func (c *clientConn) readStream(resp *http.Response, ps *postStream) {
	r := newSSEReader(resp.Body, c.opts.MaxMessageSize)
	failures, polls := 0, 0 // attempts since the last event came
	for {
		before := r.events
		err := c.readEvents(r, ps)
		resp.Body.Close()
		if c.ended() || ps != nil && c.done(ps) {
			return
		}
		if errors.Is(err, errEventTooLarge) {
			c.fail(err)
			return
		}
		if r.events > before {
			failures, polls = 0, 0
		}
		clean := err == io.EOF
		if resp = c.resume(r, ps, clean, &failures, &polls, err); resp == nil {
			return
		}
		r.r.Reset(resp.Body)
		r.begun, r.skipLF = false, false
	}
}

// resume reopens a stream that ended (clean: between events) or was cut
// (why), after event r.lastID. It returns nil when the connection has
// ended (with ErrStreamLost if resuming failed), the stream was abandoned,
// or the server has no GET (405) for the standalone stream.
func (c *clientConn) resume(r *sseReader, ps *postStream, clean bool, failures, polls *int, why error) *http.Response {
	post := ps != nil
	for {
		switch {
		case post && r.lastID == "":
			c.fail(fmt.Errorf("%w: the stream ended before its reply and gave no event id to resume it from: %v", ErrStreamLost, why))
			return nil
		case c.opts.MaxRetries < 0:
			c.fail(fmt.Errorf("%w (last event id %q; MaxRetries is negative: no resumption): %v", ErrStreamLost, r.lastID, why))
			return nil
		case !clean && *failures >= c.opts.MaxRetries:
			c.fail(fmt.Errorf("%w (last event id %q, %d attempts): %v", ErrStreamLost, r.lastID, *failures, why))
			return nil
		}
		delay := backoff(c.opts.RetryDelay, *failures)
		if clean {
			delay = backoff(c.opts.RetryDelay, *polls)
			*polls++
		} else {
			*failures++
		}
		if r.retry > 0 && clean {
			delay = r.retry // as the server asked: it polls
		} else if r.retry > 0 {
			delay = max(r.retry, delay) // the server's delay, or more after failures
		}
		if !c.sleep(delay, ps) {
			return nil
		}
		resp, err := c.get(ps, r.lastID)
		switch {
		case resp != nil:
			return resp
		case c.ended() || ps != nil && ps.ctx.Err() != nil:
			return nil
		case errors.Is(err, errNoGET) && post:
			c.fail(fmt.Errorf("%w: the stream ended before its reply, and %w", ErrStreamLost, err))
			return nil
		case errors.Is(err, errNoGET):
			return nil // no standalone stream: nothing to resume
		}
		clean, why = false, err
	}
}

// readEvents delivers r's events until the stream fails or ends, or
// every reply ps awaits has come.
func (c *clientConn) readEvents(r *sseReader, ps *postStream) error {
	for {
		data, _, err := r.next()
		if err != nil {
			return err
		}
		c.answered(replyIDs(data), ps)
		if !c.deliver(data, ps) || ps != nil && c.done(ps) {
			return nil
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

// sleep waits d, or reports false when the connection ends, or ps is
// abandoned, first.
func (c *clientConn) sleep(d time.Duration, ps *postStream) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	var abandoned <-chan struct{}
	if ps != nil {
		abandoned = ps.ctx.Done()
	}
	select {
	case <-t.C:
		return true
	case <-c.closed:
		return false
	case <-abandoned:
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
