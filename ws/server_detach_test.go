//go:build !js

package ws_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// TestServeHTTPReturnsOnceConnected (issue 34, idle connections):
// ws.Server.ServeHTTP returns once the OnConnect hooks have run, and the
// connection goes on being served on the Server's own goroutine, so that
// net/http's request goroutine and the request are let go while the
// connection lives; the hooks still see the request's context live. On
// c381bbe ServeHTTP returned only when the connection ended: the middleware
// below had not returned while the connection was open.
func TestServeHTTPReturnsOnceConnected(t *testing.T) {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "ping", func(context.Context, struct{}) (string, error) { return "pong", nil })
	hookCtxErr := make(chan error, 1)
	ended := make(chan error, 1)
	srv := &ws.Server{
		Peer: jsonrpc.Options{Handler: m},
		OnConnect: func(_ *jsonrpc.Peer, r *http.Request) {
			hookCtxErr <- r.Context().Err()
		},
		OnDisconnect: func(_ *jsonrpc.Peer, cause error) { ended <- cause },
	}
	returned := make(chan struct{}, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r)
		returned <- struct{}{}
	}))
	t.Cleanup(func() {
		srv.Shutdown(testCtx(t, wait))
		hs.Close()
	})
	p, err := ws.Dial(testCtx(t, wait), "ws"+strings.TrimPrefix(hs.URL, "http"))
	if err != nil {
		t.Fatal(err)
	}
	cleanupPeer(t, p)
	select {
	case err := <-hookCtxErr:
		if err != nil {
			t.Fatalf("OnConnect saw the request's context ended: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("OnConnect not called")
	}
	select {
	case <-returned:
	case <-time.After(wait):
		t.Fatal("ServeHTTP has not returned while the connection is open")
	}
	var s string
	if err := p.Call(testCtx(t, wait), "ping", nil, &s); err != nil || s != "pong" {
		t.Fatalf("call after ServeHTTP returned: %q, %v", s, err)
	}
	p.Close()
	select {
	case <-ended:
	case <-time.After(wait):
		t.Fatal("OnDisconnect not called after the client closed")
	}
}

// TestServeHTTPOnConnectPanicReachesNetHTTP: a panic in an OnConnect hook,
// which now runs on the Server's goroutine, is raised again on the
// request's goroutine (where net/http, or a middleware, recovers it as it
// does any handler's) and the connection is closed, instead of crashing the
// program from a goroutine nobody can recover.
func TestServeHTTPOnConnectPanicReachesNetHTTP(t *testing.T) {
	srv := &ws.Server{OnConnect: func(*jsonrpc.Peer, *http.Request) { panic("hook failed") }}
	recovered := make(chan any, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { recovered <- recover() }()
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Shutdown(testCtx(t, wait))
		hs.Close()
	})
	p, err := ws.Dial(testCtx(t, wait), "ws"+strings.TrimPrefix(hs.URL, "http"))
	if err == nil {
		cleanupPeer(t, p)
	}
	select {
	case v := <-recovered:
		if v != "hook failed" {
			t.Fatalf("recovered %v, want the hook's panic", v)
		}
	case <-time.After(wait):
		t.Fatal("the hook's panic did not reach the request's goroutine")
	}
	if err == nil {
		select {
		case <-p.Done():
		case <-time.After(wait):
			t.Fatal("connection still open after its OnConnect panicked")
		}
	}
}
