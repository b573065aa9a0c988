package httprpc

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// When a dialled connection tries again: a server's transient refusal (429
// Too Many Requests, 503 Service Unavailable) of a POST or a GET, honouring
// its Retry-After; a stream cut or closed for polling (see readStream).

// maxRetryDelay caps the delay between attempts that the client chooses
// (a server's retry field is honoured as it is).
const maxRetryDelay = 5 * time.Second

// maxRetryAfter caps the delay a Retry-After header may ask for.
const maxRetryAfter = 30 * time.Second

// minPollDelay is the least delay before resuming a stream that ended
// cleanly with nothing on it, whatever the server's retry field says: a
// retry of 1 ms on a stream that ends at once would otherwise make a GET
// every millisecond (see resume for the backoff after such streams). (A
// variable for the tests that hold it.)
var minPollDelay = 100 * time.Millisecond

// shortStream is how long a stream that brings nothing must have lasted
// not to count as ending at once.
const shortStream = time.Second

// maxStatusBody bounds the start of a refusal's body kept in a
// StatusError.
const maxStatusBody = 1 << 10

// errNoAnswer is why a POST of no call failed: no answer within
// noCallTimeout.
var errNoAnswer = errors.New("httprpc: the server did not answer in time")

// transient reports whether resp, the answer to attempt n (from 0) of a
// request, is a refusal the server means to be transient (429, 503), and
// if so the delay before the next attempt: its Retry-After (at most
// maxRetryAfter), or RetryDelay doubled n times (at most maxRetryDelay).
// It closes the body of such a response.
func (c *clientConn) transient(resp *http.Response, n int) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false
	}
	drainBody(resp.Body)
	resp.Body.Close()
	if d, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
		return d, true
	}
	return backoff(c.opts.RetryDelay, n), true
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if s, err := strconv.ParseUint(v, 10, 32); err == nil {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	} else {
		return 0, false
	}
	return min(max(d, 0), maxRetryAfter), true
}

// drainBody reads what is left of a body, up to 64 KiB, so that its
// connection can be reused; a longer one is left for Close to drop with
// the connection.
func drainBody(r io.Reader) { _, _ = io.CopyN(io.Discard, r, 64<<10) }

// retryable is a GET's failure that may be retried: a transport error, or
// a transient refusal (delay is its Retry-After, or 0).
type retryable struct {
	err   error
	delay time.Duration
}

func (e *retryable) Error() string { return e.err.Error() }
func (e *retryable) Unwrap() error { return e.err }

// errNoGET is get's answer to 405: the server has no GET streams.
var errNoGET = errors.New("httprpc: the server answers GET with 405 Method Not Allowed: it has no standalone stream and resumes none")

// errGone is get's answer to 410: the server no longer keeps the events
// after the id asked for.
var errGone = errors.New("httprpc: the server answers the resuming GET with 410 Gone: it no longer keeps the events")

// sleep waits d, or reports false when the connection ends, or ps (if
// not nil) is abandoned, first.
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
