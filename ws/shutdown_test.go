//go:build !js

package ws_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// slowMux serves slow (params [ms]): it reports on started, then sleeps,
// ending early with its ctx; and echo.
func slowMux(t testing.TB, started chan<- struct{}) *jsonrpc.Mux {
	m := testMux(t)
	jsonrpc.Register(m, "slow", func(ctx context.Context, ms int) (int, error) {
		started <- struct{}{}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return ms, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
	return m
}

// wantShuttingDownOrClosed checks the error of a call made after Shutdown
// began.
func wantShuttingDownOrClosed(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, &jsonrpc.Error{Code: jsonrpc.CodeShuttingDown}) && !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("call after Shutdown began = %v, want code -32003 or ErrClosed", err)
	}
}

// TestShutdownInFlight: Shutdown lets running calls finish, refuses new ones
// and new connections, then closes every connection with status 1001.
func TestShutdownInFlight(t *testing.T) {
	const n = 5
	started := make(chan struct{}, n)
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: slowMux(t, started)}}, nil)
	clients := make([]*jsonrpc.Peer, n)
	for i := range clients {
		clients[i] = ts.dial(t, nil, nil)
		ts.nextPeer(t)
	}
	raw := ts.rawDial(t, nil)
	ts.nextPeer(t)
	rawClosed := make(chan error, 1)
	go func() { _, _, err := readRaw(t, raw); rawClosed <- err }()

	ctx := testCtx(t, wait)
	results := make(chan error, n)
	for _, c := range clients {
		go func() {
			var ms int
			err := c.Call(ctx, "slow", []int{300}, &ms)
			if err == nil && ms != 300 {
				err = errors.New("wrong result")
			}
			results <- err
		}()
	}
	for range n {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("slow handlers did not start")
		}
	}

	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(ctx) }()

	// Shutdown drains each connection on its own goroutine: a call fails
	// once its connection has begun to drain, which must happen well before
	// the running handlers end.
	deadline := time.Now().Add(250 * time.Millisecond)
	for _, c := range clients {
		for {
			err := c.Call(ctx, "echo", []int{1}, nil)
			if err != nil {
				wantShuttingDownOrClosed(t, err)
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("calls still served 250 ms after Shutdown began")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, resp, err := websocket.Dial(ctx, ts.url, &websocket.DialOptions{HTTPClient: ts.hs.Client()}); err == nil {
		t.Error("a new connection was accepted during Shutdown")
	} else if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("Dial during Shutdown: %v, want HTTP 503", err)
	}

	for range n {
		if err := <-results; err != nil {
			t.Errorf("call in flight at Shutdown: %v, want its result", err)
		}
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown = %v, want nil", err)
	}
	// 1001 is a clean end for a Peer; the raw client shows the status.
	for i, c := range clients {
		if err := waitErr(t, "client Wait", c); err != nil {
			t.Errorf("client %d Wait = %v, want nil (closed with 1001)", i, err)
		}
	}
	if err := <-rawClosed; websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("raw client read %v, want close status 1001", err)
	}
}

// TestShutdownDeadline: when ctx ends before a long handler does, Shutdown
// returns ctx's error promptly: the connection is closed, which cancels the
// handler's ctx, and the call fails on the client.
func TestShutdownDeadline(t *testing.T) {
	started := make(chan struct{}, 1)
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: slowMux(t, started)}}, nil)
	client := ts.dial(t, nil, nil)
	ts.nextPeer(t)

	ctx := testCtx(t, wait)
	call := make(chan error, 1)
	go func() { call <- client.Call(ctx, "slow", []int{60_000}, nil) }()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("slow handler did not start")
	}

	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := ts.Shutdown(sctx)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Shutdown took %v with a 200 ms ctx", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
	if err := <-call; !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("call cut short by Shutdown = %v, want ErrClosed", err)
	}
	if err := waitErr(t, "client Wait", client); err != nil {
		t.Errorf("client Wait = %v, want nil (closed with 1001)", err)
	}
}

// TestMaxConnections: beyond MaxConnections an upgrade gets HTTP 503, and a
// slot is free again once a connection has ended.
func TestMaxConnections(t *testing.T) {
	ts := startServer(t, &ws.Server{MaxConnections: 2}, nil)
	first := ts.dial(t, nil, nil)
	firstServer := ts.nextPeer(t)
	ts.dial(t, nil, nil)
	ts.nextPeer(t)

	ctx := testCtx(t, wait)
	_, resp, err := websocket.Dial(ctx, ts.url, &websocket.DialOptions{HTTPClient: ts.hs.Client()})
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third Dial: %v, %v; want HTTP 503", resp, err)
	}
	if _, err := ws.Dial(ctx, ts.url, ws.DialOptions{HTTPClient: ts.hs.Client()}); err == nil {
		t.Fatal("third ws.Dial succeeded")
	}

	first.Close()
	waitErr(t, "server Wait", firstServer)
	// The server frees the slot when its handler returns, just after the
	// Peer ends: retry for a bounded time.
	for i := 0; ; i++ {
		p, err := ws.Dial(ctx, ts.url, ws.DialOptions{HTTPClient: ts.hs.Client()})
		if err == nil {
			cleanupPeer(t, p)
			ts.nextPeer(t)
			break
		}
		if i == 100 {
			t.Fatalf("no slot freed after a connection ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShutdownDeadlineHandlerIgnoresCtx pins that Shutdown returns ctx's
// error promptly when ctx ends while a handler that ignores its ctx is still
// running, as http.Server.Shutdown does: it closes the connection and stops
// waiting for the handler.
func TestShutdownDeadlineHandlerIgnoresCtx(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	finished := make(chan struct{})
	m := testMux(t)
	m.HandleFunc("stubborn", func(context.Context, *jsonrpc.Request) (any, error) {
		defer close(finished)
		started <- struct{}{}
		select { // ignores its ctx: 3 s, or until the test is done
		case <-release:
		case <-time.After(3 * time.Second):
		}
		return "done", nil
	})
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: m}}, nil)
	client := ts.dial(t, nil, nil)
	ts.nextPeer(t)

	ctx := testCtx(t, wait)
	call := make(chan error, 1)
	go func() { call <- client.Call(ctx, "stubborn", nil, nil) }()
	within(t, started, "the handler to start")

	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := ts.Shutdown(sctx)
	d := time.Since(start)
	close(release)
	within(t, finished, "the handler to return")

	if d > 500*time.Millisecond {
		t.Errorf("Shutdown took %v with a 100 ms ctx and a handler ignoring its ctx", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
	if err := within(t, call, "the call"); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("call cut short by Shutdown = %v, want ErrClosed", err)
	}
}
