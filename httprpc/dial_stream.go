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

// readResponse reads the response of a POST holding calls: a JSON reply,
// or an event stream (resumed when it ends before its replies), or
// nothing. ps is the POST's stream.
func (c *clientConn) readResponse(resp *http.Response, ps *postStream) {
	defer resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "text/event-stream":
		c.readStream(resp, ps)
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.opts.MaxMessageSize)+1))
		switch {
		case ps.ctx.Err() != nil && c.ctx.Err() == nil:
			// abandoned: its call was given up
		case err != nil:
			c.transportError("read a reply", err)
		case len(data) > c.opts.MaxMessageSize:
			c.fail(fmt.Errorf("httprpc: a reply over %d bytes: %w", c.opts.MaxMessageSize, errEventTooLarge))
		case len(bytes.TrimSpace(data)) > 0:
			ids := replyIDs(data)
			c.learnVersion(data, ids)
			c.answered(ids, ps)
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
// ends, until the connection ends. A server that answers 405 has none;
// one whose GET fails MaxRetries times in a row (a transport error, 429,
// 5xx) is done without, logged.
func (c *clientConn) standalone() {
	for failures := 0; ; failures++ {
		resp, err := c.get(nil, "")
		var re *retryable
		switch {
		case resp != nil:
			c.readStream(resp, nil)
			return
		case errors.Is(err, errNoGET), c.ended():
			return
		case !errors.As(err, &re):
			return // refused: the connection has ended
		case failures >= c.opts.MaxRetries:
			// The calls' own streams may still serve: do without.
			c.log.Info("httprpc: giving up the session's standalone stream", "err", err, "attempts", failures+1)
			return
		}
		if !c.sleep(max(re.delay, backoff(c.opts.RetryDelay, failures)), nil) {
			return
		}
	}
}

// get sends a GET for the standalone stream (ps nil), or to resume the
// stream that lastID names. It returns errNoGET for 405, errGone for 410,
// a *retryable for a transport error or a transient refusal (429, 5xx:
// a GET may be sent again), and for any other refusal an error it has
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
		return nil, &retryable{err: fmt.Errorf("httprpc: failed to GET: %w", err)}
	}
	what := "the standalone stream"
	if lastID != "" {
		what = fmt.Sprintf("the stream after event %q", lastID)
	}
	switch code := resp.StatusCode; {
	case code/100 == 2:
		return resp, nil
	case code == http.StatusMethodNotAllowed:
		resp.Body.Close()
		return nil, errNoGET
	case code == http.StatusGone:
		resp.Body.Close()
		return nil, errGone
	case code == http.StatusTooManyRequests || code/100 == 5:
		delay, _ := retryAfter(resp.Header.Get("Retry-After"))
		return nil, &retryable{err: fmt.Errorf("httprpc: the GET of %s was refused: %w", what, statusError(resp, http.MethodGet)), delay: delay}
	}
	err = c.refusal(resp, http.MethodGet, what)
	c.fail(err)
	return nil, err
}

// readStream delivers the messages of an event stream until it has
// carried every reply its POST awaits (ps) or, for the standalone stream
// (ps nil), until the connection ends. A stream that ends before is
// resumed with a GET bearing Last-Event-ID (see resume). The event a
// SessionServer sends when it ends the session ends the connection at
// once, with ErrSessionExpired.
func (c *clientConn) readStream(resp *http.Response, ps *postStream) {
	r := newSSEReader(resp.Body, c.opts.MaxMessageSize)
	failures, empties := 0, 0 // attempts since the last event came; streams that ended at once with nothing
	for {
		before, opened := r.events, time.Now()
		err := c.readEvents(r, ps)
		resp.Body.Close()
		if c.ended() || ps != nil && c.done(ps) {
			return
		}
		var ended *sessionEnded
		switch {
		case errors.As(err, &ended):
			c.fail(fmt.Errorf("%w: %w", ErrSessionExpired, ended))
			return
		case errors.Is(err, errEventTooLarge):
			c.fail(err)
			return
		}
		clean := err == io.EOF
		switch {
		case r.events > before:
			failures, empties = 0, 0
		case clean && time.Since(opened) < shortStream:
			empties++
		case clean:
			empties = 0 // a long poll that brought nothing: the server polls
		}
		if resp = c.resume(r, ps, clean, &failures, empties, err); resp == nil {
			return
		}
		r.r.Reset(resp.Body)
		r.begun, r.skipLF = false, false
	}
}

// resume reopens a stream that ended (clean: between events) or was cut
// (why), after event r.lastID. A clean end is polling (SEP-1699): the
// stream is resumed after the server's retry field (or RetryDelay), as
// often as the server closes it; after one that ended at once with
// nothing on it, no sooner than minPollDelay, doubled for each more such
// stream in a row (at most maxRetryDelay, or the server's retry if
// longer). A cut, or a GET that fails (a transport error, 429, 5xx), is a
// failure: after RetryDelay doubled (or the server's retry field or
// Retry-After, if longer); MaxRetries of them in a row end the connection
// with ErrStreamLost. So do 410 and 405 for a POST's stream; the
// standalone stream is opened afresh after 410 (its events since are
// lost), and not at all after 405. resume returns nil when the connection
// has ended, the stream was abandoned, or the standalone stream is no
// more.
func (c *clientConn) resume(r *sseReader, ps *postStream, clean bool, failures *int, empties int, why error) *http.Response {
	post := ps != nil
	for {
		switch {
		case post && r.lastID == "":
			c.fail(fmt.Errorf("%w: the stream ended before its reply and gave no event id to resume it from: %w", ErrStreamLost, why))
			return nil
		case c.opts.MaxRetries < 0:
			c.fail(fmt.Errorf("%w (last event id %q; MaxRetries is negative: no resumption): %w", ErrStreamLost, r.lastID, why))
			return nil
		case !clean && *failures >= c.opts.MaxRetries:
			c.fail(fmt.Errorf("%w (last event id %q, %d attempts): %w", ErrStreamLost, r.lastID, *failures, why))
			return nil
		}
		var delay time.Duration
		if clean {
			delay = r.retry
			if delay <= 0 {
				delay = c.opts.RetryDelay
			}
			if empties > 0 {
				delay = backoffTo(max(delay, minPollDelay), empties-1, max(delay, maxRetryDelay))
			}
		} else {
			delay = max(r.retry, backoff(c.opts.RetryDelay, *failures))
			var re *retryable
			if errors.As(why, &re) {
				delay = max(delay, re.delay)
			}
			*failures++
		}
		if !c.sleep(delay, ps) {
			return nil
		}
		resp, err := c.get(ps, r.lastID)
		var re *retryable
		switch {
		case resp != nil:
			return resp
		case c.ended() || ps != nil && ps.ctx.Err() != nil:
			return nil
		case (errors.Is(err, errNoGET) || errors.Is(err, errGone)) && post:
			c.fail(fmt.Errorf("%w: the stream ended before its reply, and %w", ErrStreamLost, err))
			return nil
		case errors.Is(err, errNoGET):
			return nil // no standalone stream: nothing to resume
		case errors.Is(err, errGone):
			c.log.Info("httprpc: the standalone stream's events after the last one read are no longer kept: opening it afresh", "last event id", r.lastID)
			r.lastID, clean = "", true
			continue
		case errors.As(err, &re):
			clean, why = false, err
			continue
		}
		return nil // refused: the connection has ended
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
		ids := replyIDs(data)
		c.learnVersion(data, ids)
		c.answered(ids, ps)
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

// backoffTo is first doubled n times, at most limit.
func backoffTo(first time.Duration, n int, limit time.Duration) time.Duration {
	d := first
	for range n {
		if d *= 2; d >= limit {
			return limit
		}
	}
	return min(d, limit)
}
