//go:build !js

package ws_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// restartable is a ws.Server on a fixed loopback address that can be
// stopped and started again there, as a redeployed server is.
type restartable struct {
	t    *testing.T
	addr string
	mux  func() *jsonrpc.Mux // a fresh Mux for each start

	srv *ws.Server
	hs  *http.Server
	run chan struct{} // closed when hs.Serve has returned
}

func (r *restartable) start() {
	r.t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatalf("listen on %s again: %v", r.addr, err)
	}
	r.addr = ln.Addr().String()
	r.srv = &ws.Server{Peer: jsonrpc.Options{Handler: r.mux()}}
	r.hs = &http.Server{Handler: r.srv, ReadHeaderTimeout: wait}
	r.run = make(chan struct{})
	go func() {
		defer close(r.run)
		r.hs.Serve(ln)
	}()
}

// stop drops every connection at once (handlers in flight are not waited
// for) and closes the listener.
func (r *restartable) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r.srv.Shutdown(ctx) // runs out of time on the blocked handlers: closes their connections
	r.hs.Close()
	<-r.run
}

// TestClientSurvivesServerRestart: a Client whose server is stopped and
// started again on the same address connects again by itself. OnConnect
// runs on both connections; calls in flight at the stop end exactly once,
// a plain Call with ErrDropped and a CallIdempotent with its reply from the
// new server (so no call is answered twice); calls after the restart
// succeed.
func TestClientSurvivesServerRestart(t *testing.T) {
	var (
		generation atomic.Int32 // which server is running: 1, then 2
		jobs       [3]atomic.Int32
		entered    = make(chan struct{}, 16)
	)
	r := &restartable{t: t, addr: "127.0.0.1:0", mux: func() *jsonrpc.Mux {
		gen := generation.Add(1)
		m := jsonrpc.NewMux()
		jsonrpc.Register(m, "echo", func(_ context.Context, p []string) ([]string, error) { return p, nil })
		jsonrpc.Register(m, "job", func(ctx context.Context, _ struct{}) (int32, error) {
			jobs[gen].Add(1)
			if gen == 1 { // the first server never answers: it is stopped
				entered <- struct{}{}
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return gen, nil
		})
		return m
	}}
	r.start()
	defer func() { r.stop() }()

	var (
		mu       sync.Mutex
		hooks    int
		states   []ws.State
		stateLog = func(s ws.State, _ error) { mu.Lock(); states = append(states, s); mu.Unlock() }
	)
	c := ws.NewClient("ws://"+r.addr+"/", ws.ClientOptions{
		OnConnect: func(ctx context.Context, p *jsonrpc.Peer) error {
			mu.Lock()
			hooks++
			mu.Unlock()
			var got []string
			return p.Call(ctx, "echo", []string{"hello"}, &got) // the hook may call
		},
		OnState:    stateLog,
		MinBackoff: 10 * time.Millisecond,
		MaxBackoff: 100 * time.Millisecond,
	})
	defer c.Close()
	ctx := testCtx(t, 3*wait)

	var got []string
	if err := c.Call(ctx, "echo", []string{"before"}, &got); err != nil || len(got) != 1 || got[0] != "before" {
		t.Fatalf("call before the restart: %q, %v", got, err)
	}

	// Three plain calls and one idempotent call in flight at the stop.
	type outcome struct {
		n   int32
		err error
	}
	plain := make(chan outcome, 3)
	for range 3 {
		go func() {
			var n int32
			err := c.Call(ctx, "job", struct{}{}, &n)
			plain <- outcome{n, err}
		}()
	}
	idem := make(chan outcome, 1)
	go func() {
		var n int32
		err := c.CallIdempotent(ctx, "job", struct{}{}, &n)
		idem <- outcome{n, err}
	}()
	for range 4 {
		select {
		case <-entered:
		case <-time.After(wait):
			t.Fatal("the calls did not reach the first server")
		}
	}

	r.stop()
	for range 3 {
		select {
		case o := <-plain:
			if !errors.Is(o.err, ws.ErrDropped) {
				t.Errorf("plain call in flight at the stop: %d, %v; want ErrDropped", o.n, o.err)
			}
		case <-time.After(wait):
			t.Fatal("a plain call in flight at the stop did not end")
		}
	}
	if s := c.State(); s == ws.Connected {
		t.Errorf("state with the server down: %v", s)
	}

	r.start() // same address
	select {
	case o := <-idem:
		if o.err != nil || o.n != 2 {
			t.Errorf("idempotent call across the restart: %d, %v; want the second server's reply", o.n, o.err)
		}
	case <-time.After(wait):
		t.Fatal("the idempotent call did not end after the restart")
	}
	if err := c.Call(ctx, "echo", []string{"after"}, &got); err != nil || got[0] != "after" {
		t.Fatalf("call after the restart: %q, %v", got, err)
	}
	if n := c.Reconnects(); n != 1 {
		t.Errorf("Reconnects = %d, want 1", n)
	}
	mu.Lock()
	if hooks != 2 {
		t.Errorf("OnConnect ran %d times, want 2", hooks)
	}
	want := []ws.State{ws.Connected, ws.Reconnecting}
	if len(states) < 3 || states[0] != want[0] || states[1] != want[1] || states[len(states)-1] != ws.Connected {
		t.Errorf("states %v: want connected, reconnecting..., connected", states)
	}
	mu.Unlock()
	if n1, n2 := jobs[1].Load(), jobs[2].Load(); n1 != 4 || n2 != 1 {
		t.Errorf("job ran %d times on the first server, %d on the second; want 4 and 1 (only the idempotent call again)", n1, n2)
	}

	if err := c.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if s := c.State(); s != ws.Closed {
		t.Errorf("state after Close: %v", s)
	}
	if err := c.Call(ctx, "echo", nil, nil); !errors.Is(err, ws.ErrClientClosed) {
		t.Errorf("Call after Close = %v, want ErrClientClosed", err)
	}
}

// TestClientGivesUp: with MaxAttempts, a Client whose server never
// answers closes with ErrGaveUp, and a call waiting for a connection
// returns that error.
func TestClientGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := ws.NewClient("ws://"+addr+"/", ws.ClientOptions{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxAttempts: 3})
	defer c.Close()
	err = c.Call(testCtx(t, wait), "echo", nil, nil)
	if !errors.Is(err, ws.ErrGaveUp) {
		t.Fatalf("Call = %v, want ErrGaveUp", err)
	}
	select {
	case <-c.Done():
	case <-time.After(wait):
		t.Fatal("Done not closed after giving up")
	}
}

// TestClientCallWaitsWithinCtx: a call made while no server is up waits
// for a connection only as long as its ctx.
func TestClientCallWaitsWithinCtx(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := ws.NewClient("ws://"+addr+"/", ws.ClientOptions{MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := c.Call(ctx, "echo", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > wait {
		t.Errorf("Call returned after %v", d)
	}
}

// TestClientMaxAttemptsCountsAfterDrop: after a connection drops, a Client
// with MaxAttempts 3 makes exactly three failed attempts before it gives up
// (finding 10: it made two), and its error counts them truly.
func TestClientMaxAttemptsCountsAfterDrop(t *testing.T) {
	var requests atomic.Int32
	srv := &ws.Server{OnConnect: func(p *jsonrpc.Peer, _ *http.Request) { p.Close() }} // drop at once
	ts := startServer(t, srv, func(hs *httptest.Server) {
		hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if requests.Add(1) == 1 {
				srv.ServeHTTP(w, r) // the first connection is accepted, then dropped
				return
			}
			http.Error(w, "down", http.StatusServiceUnavailable) // every later attempt fails
		})
	})
	c := ws.NewClient(ts.url, ws.ClientOptions{
		HTTPClient:  ts.hs.Client(),
		MinBackoff:  time.Millisecond,
		MaxBackoff:  5 * time.Millisecond,
		MaxAttempts: 3,
	})
	defer c.Close()
	select {
	case <-c.Done():
	case <-time.After(wait):
		t.Fatal("the Client did not give up")
	}
	if n := requests.Load() - 1; n != 3 {
		t.Errorf("failed attempts after the drop: %d, want MaxAttempts = 3", n)
	}
	err := c.Call(testCtx(t, wait), "echo", nil, nil)
	if !errors.Is(err, ws.ErrGaveUp) || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Errorf("Call after giving up = %v, want ErrGaveUp after 3 attempts", err)
	}
}

// stuckPrompt is a client-side handler that ignores its ctx, as a prompt
// waiting for a user does: it returns only when release is closed, and
// then reports whether its ctx had ended.
type stuckPrompt struct {
	entered  chan struct{}
	release  chan struct{}
	ctxEnded chan bool
}

func newStuckPrompt() *stuckPrompt {
	return &stuckPrompt{entered: make(chan struct{}, 1), release: make(chan struct{}), ctxEnded: make(chan bool, 1)}
}

func (s *stuckPrompt) mux() *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	m.HandleFunc("prompt", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		s.entered <- struct{}{}
		<-s.release
		s.ctxEnded <- ctx.Err() != nil
		return "too late", nil
	})
	return m
}

// start has server call the client's prompt, and returns once the
// handler runs.
func (s *stuckPrompt) start(t *testing.T, server *jsonrpc.Peer) {
	t.Helper()
	go server.Call(context.Background(), "prompt", nil, nil) // ends when server closes
	select {
	case <-s.entered:
	case <-time.After(wait):
		t.Fatal("the client's prompt handler did not start")
	}
}

// finish releases the handler and checks that its ctx had been cancelled.
func (s *stuckPrompt) finish(t *testing.T) {
	t.Helper()
	close(s.release)
	select {
	case ended := <-s.ctxEnded:
		if !ended {
			t.Error("the old connection's handler still had a live ctx after the connection ended")
		}
	case <-time.After(wait):
		t.Error("the prompt handler did not return after its release")
	}
}

// closeClientWithin closes c, failing the test if Close does not return
// within wait; then the prompt is released (and checked, if Close
// returned in time).
func closeClientWithin(t *testing.T, c *ws.Client, prompt *stuckPrompt) {
	t.Helper()
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
		prompt.finish(t)
	case <-time.After(wait):
		t.Errorf("Client.Close did not return within %v", wait)
		close(prompt.release)
		<-done
	}
}

// TestClientRedialsWhileOldHandlerRuns (finding 4): a client-side handler
// of the dropped connection that ignores its ctx keeps running, owned by
// the old Peer with its ctx cancelled, and does not hold up the Client: it
// dials again, calls flow on the new connection, and Close returns at once.
func TestClientRedialsWhileOldHandlerRuns(t *testing.T) {
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}}, nil)
	prompt := newStuckPrompt()
	c := ws.NewClient(ts.url, ws.ClientOptions{
		HTTPClient: ts.hs.Client(),
		Peer:       jsonrpc.Options{Handler: prompt.mux()},
		MinBackoff: time.Millisecond,
		MaxBackoff: 10 * time.Millisecond,
	})
	ctx := testCtx(t, 3*wait)
	must(t, c.CallIdempotent(ctx, "echo", []int{1}, nil))
	server := ts.nextPeer(t)
	prompt.start(t, server)
	server.Close() // the connection ends under the running handler

	callCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var got []int
	if err := c.CallIdempotent(callCtx, "echo", []int{2}, &got); err != nil || len(got) != 1 || got[0] != 2 {
		t.Errorf("call after the drop = %v, %v; want [2] from a new connection", got, err)
	}
	if n, s := c.Reconnects(), c.State(); n != 1 || s != ws.Connected {
		t.Errorf("after the drop: %d reconnects, state %v; want 1, connected", n, s)
	}
	closeClientWithin(t, c, prompt)
}

// TestClientCallDuringDrainWaitsForNextConnection (finding 4): a Call made
// after the server closed the connection cleanly, while the old Peer still
// drains its handlers, was never sent on the old connection: it waits for
// the next one and gets its reply there, rather than failing with
// ErrDropped.
func TestClientCallDuringDrainWaitsForNextConnection(t *testing.T) {
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}}, nil)
	prompt := newStuckPrompt()
	c := ws.NewClient(ts.url, ws.ClientOptions{
		HTTPClient: ts.hs.Client(),
		Peer:       jsonrpc.Options{Handler: prompt.mux()},
		MinBackoff: time.Millisecond,
		MaxBackoff: 10 * time.Millisecond,
	})
	ctx := testCtx(t, 3*wait)
	must(t, c.Call(ctx, "echo", []int{1}, nil))
	server := ts.nextPeer(t)
	prompt.start(t, server) // the old Peer will drain this handler
	server.Close()          // status 1000: a clean end, answered before Close returns

	callCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var got []string
	if err := c.Call(callCtx, "echo", []string{"after"}, &got); err != nil || len(got) != 1 || got[0] != "after" {
		t.Errorf("plain Call made while the old Peer drains = %q, %v; want its reply from the next connection", got, err)
	}
	closeClientWithin(t, c, prompt)
}
