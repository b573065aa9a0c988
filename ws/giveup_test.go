//go:build !js

package ws_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// memHTTP serves h on the in-memory network until the test ends, and
// returns an HTTP client that reaches it (at any URL: ws://mem/...).
func memHTTP(t *testing.T, h http.Handler) *http.Client {
	ln := newMemListener()
	hs := &http.Server{Handler: h}
	tr := &http.Transport{DialContext: ln.dial}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		hs.Close()
		<-served
		tr.CloseIdleConnections()
	})
	return &http.Client{Transport: tr}
}

// wrongPath is a server whose Server is mounted at /rpc: any other path
// gets net/http's 404, and /busy a 503.
func wrongPath(t *testing.T) *http.Client {
	srv := &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}}
	mux := http.NewServeMux()
	mux.Handle("/rpc", srv)
	mux.HandleFunc("/page", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("<!doctype html>a page, not a WebSocket"))
	})
	mux.HandleFunc("/busy", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "busy: "+strings.Repeat("x", 4<<10), http.StatusServiceUnavailable)
	})
	hc := memHTTP(t, mux)
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return hc
}

// stateLog records what OnState reports.
type stateLog struct {
	mu     sync.Mutex
	states []ws.State
	causes []error
}

func (l *stateLog) on(s ws.State, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states, l.causes = append(l.states, s), append(l.causes, cause)
}

func (l *stateLog) last() (ws.State, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.states) == 0 {
		return -1, nil
	}
	return l.states[len(l.states)-1], l.causes[len(l.causes)-1]
}

// TestDialWrongPathIsStatusError (issue 31, point 1): a handshake refused
// with an HTTP status fails Dial with a *StatusError holding the status
// and the start of the body, at most 1 KiB of it, and saying what to do.
func TestDialWrongPathIsStatusError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hc := wrongPath(t)
		for _, tc := range []struct {
			path string
			code int
			body string
			hint string
		}{
			{"/wrong", 404, "404 page not found", "check its path"},
			{"/busy", 503, "busy: xxx", "try again later"},
		} {
			_, err := ws.Dial(t.Context(), "ws://mem"+tc.path, ws.DialOptions{HTTPClient: hc})
			var se *ws.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("Dial %s = %v, want a *ws.StatusError", tc.path, err)
			}
			if se.Code != tc.code || !strings.HasPrefix(string(se.Body), tc.body) || len(se.Body) > 1<<10 {
				t.Errorf("Dial %s: StatusError{%d, %d bytes %.40q}, want %d, at most 1 KiB starting %q", tc.path, se.Code, len(se.Body), se.Body, tc.code, tc.body)
			}
			if !strings.Contains(err.Error(), tc.hint) {
				t.Errorf("Dial %s = %q, which does not say %q", tc.path, err, tc.hint)
			}
		}
	})
}

// TestClientGivesUpOnWrongPath (issue 31, point 1): a Client pointed at a
// path nothing serves stops at once with the 404 instead of retrying for
// ever: a Call with a 2 s ctx returns the refusal (errors.As finds the
// status), and so do Err and OnState's Closed. On 3db20dd the Call
// returned a bare "context deadline exceeded", and the 404 was nowhere but
// in OnState.
func TestClientGivesUpOnWrongPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hc := wrongPath(t)
		var log stateLog
		c := ws.NewClient("ws://mem/wrong", ws.ClientOptions{HTTPClient: hc, OnState: log.on})
		defer c.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()
		err := c.Call(ctx, "echo", nil, nil)
		t.Logf("Call: %v", err)
		var se *ws.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusNotFound || !errors.Is(err, ws.ErrGaveUp) {
			t.Fatalf("Call = %v, want the 404 (a *ws.StatusError) and ErrGaveUp", err)
		}
		if d := time.Since(start); d >= 2*time.Second {
			t.Errorf("Call returned after %v, when its ctx ended: the Client did not give up", d)
		}
		<-c.Done()
		if !errors.As(c.Err(), &se) || se.Code != http.StatusNotFound {
			t.Errorf("Err() = %v, want the 404", c.Err())
		}
		if s, cause := log.last(); s != ws.Closed || !errors.As(cause, &se) {
			t.Errorf("OnState last told (%v, %v), want (closed, the 404)", s, cause)
		}
		if !strings.Contains(err.Error(), "check its path") {
			t.Errorf("Call = %q, which does not say what to do", err)
		}
	})
}

// TestClientCallNamesLastFailure (issue 31, point 1): a call whose ctx
// ends while the Client retries returns an error that wraps both the ctx's
// error and the last attempt's failure: a 503 that the Client retries, and
// a 404 it retries too when GiveUp says so.
func TestClientCallNamesLastFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hc := wrongPath(t)
		for _, tc := range []struct {
			path   string
			code   int
			giveUp func(error) bool
		}{
			{"/busy", http.StatusServiceUnavailable, nil},
			{"/wrong", http.StatusNotFound, func(error) bool { return false }},
		} {
			c := ws.NewClient("ws://mem"+tc.path, ws.ClientOptions{HTTPClient: hc, GiveUp: tc.giveUp})
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			err := c.Call(ctx, "echo", nil, nil)
			cancel()
			t.Logf("Call to %s: %v", tc.path, err)
			var se *ws.StatusError
			if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &se) || se.Code != tc.code {
				t.Errorf("Call to %s = %v, want DeadlineExceeded and the last attempt's HTTP %d", tc.path, err, tc.code)
			}
			if c.Err() != nil {
				t.Errorf("Err() = %v while the Client still tries", c.Err())
			}
			c.Close()
			if !errors.Is(c.Err(), ws.ErrClientClosed) {
				t.Errorf("Err() after Close = %v, want ErrClientClosed", c.Err())
			}
		}
	})
}

// TestClientOnStateEveryFailedAttempt pins OnState's doc: it is told of
// every failed attempt, not only of changes of state: a Client whose
// server answers 503 three times, with MaxAttempts 3, is told Connecting
// with the first two 503s, then Closed with the third. A newcomer read "every change of state" and saw connecting six
// times in a row.
func TestClientOnStateEveryFailedAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hc := wrongPath(t)
		var log stateLog
		c := ws.NewClient("ws://mem/busy", ws.ClientOptions{HTTPClient: hc, OnState: log.on, MaxAttempts: 3})
		defer c.Close()
		<-c.Done()
		log.mu.Lock()
		defer log.mu.Unlock()
		failed := 0
		for i, s := range log.states {
			var se *ws.StatusError
			if (s == ws.Connecting || s == ws.Closed) && errors.As(log.causes[i], &se) && se.Code == 503 {
				failed++
			}
		}
		if failed != 3 || log.states[len(log.states)-1] != ws.Closed {
			t.Fatalf("OnState told %v with %v; want each of 3 failed attempts' 503, the last with Closed", log.states, log.causes)
		}
	})
}

// TestClientGivesUpOnWhatCannotChange pins that a Client gives up at once,
// by default, on a URL that is no WebSocket URL (no scheme, a foreign
// scheme: ws.ErrBadURL) and on one that serves plain HTTP (200): neither
// changes however often it tries. A newcomer's bot pointed at
// "127.0.0.1:8080/rpc", "ftp://..." or a page retried for ever, and hung
// on c.Peer(ctx) with the cause only in OnState.
func TestClientGivesUpOnWhatCannotChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hc := wrongPath(t)
		for _, tc := range []struct {
			url  string
			want func(error) bool
		}{
			{"127.0.0.1:8080/rpc", func(err error) bool { return errors.Is(err, ws.ErrBadURL) }},
			{"ftp://mem/rpc", func(err error) bool { return errors.Is(err, ws.ErrBadURL) }},
			{"ws:///rpc", func(err error) bool { return errors.Is(err, ws.ErrBadURL) }},
			{"ws://mem/page", func(err error) bool {
				var se *ws.StatusError
				return errors.As(err, &se) && se.Code == http.StatusOK
			}},
		} {
			c := ws.NewClient(tc.url, ws.ClientOptions{HTTPClient: hc})
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			_, err := c.Peer(ctx)
			cancel()
			c.Close()
			if !errors.Is(err, ws.ErrGaveUp) || !tc.want(err) {
				t.Errorf("NewClient(%q).Peer = %v, want it to give up at once, naming why", tc.url, err)
			}
		}
	})
}
