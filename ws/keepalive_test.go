//go:build !js

package ws_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// quickPings finds a silent peer in about 200 ms.
var quickPings = ws.Options{PingInterval: 100 * time.Millisecond, PingTimeout: 100 * time.Millisecond}

// TestKeepaliveServer: a client that never reads never answers pings
// (coder/websocket answers them only from inside Read), so the server's
// Peer ends with a cause wrapping ErrKeepalive.
func TestKeepaliveServer(t *testing.T) {
	ts := startServer(t, &ws.Server{Conn: quickPings}, nil)
	start := time.Now()
	ts.rawDial(t, nil) // nobody ever calls Read on it
	server := ts.nextPeer(t)

	err := waitErr(t, "server Wait", server)
	if !errors.Is(err, ws.ErrKeepalive) {
		t.Errorf("server Wait = %v, want it to wrap ws.ErrKeepalive", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("silent client found after %v, want within 1s", d)
	}
}

// TestKeepaliveClient: a Dial'd Peer whose server stops reading ends when a
// ping goes unanswered, and its pending call fails at that moment with
// ErrClosed instead of waiting for its own deadline.
func TestKeepaliveClient(t *testing.T) {
	var handlers handlerWG
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		<-release // accept, then never read: no pong, no reply
	}))
	t.Cleanup(func() {
		close(release)
		handlers.wait(t)
		hs.Close()
	})

	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	p, err := ws.Dial(testCtx(t, wait), url, ws.DialOptions{Conn: quickPings, HTTPClient: hs.Client()})
	if err != nil {
		t.Fatal(err)
	}
	cleanupPeer(t, p)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err = p.Call(ctx, "never.answered", nil, nil)
	d := time.Since(start)
	if !errors.Is(err, jsonrpc.ErrClosed) || !errors.Is(err, ws.ErrKeepalive) {
		t.Errorf("pending call = %v, want ErrClosed wrapping ws.ErrKeepalive", err)
	}
	if d > time.Second {
		t.Errorf("pending call failed after %v, want within 1s of the keepalive", d)
	}
	if err := waitErr(t, "client Wait", p); !errors.Is(err, ws.ErrKeepalive) {
		t.Errorf("client Wait = %v, want it to wrap ws.ErrKeepalive", err)
	}
}

// TestKeepaliveHealthy: pings answered by a reading peer keep an idle
// connection alive across many intervals.
func TestKeepaliveHealthy(t *testing.T) {
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}, Conn: quickPings}, nil)
	client := ts.dial(t, nil, &ws.DialOptions{Conn: quickPings})
	server := ts.nextPeer(t)
	select {
	case <-server.Done():
		t.Fatalf("server Peer ended on a healthy connection: %v", server.Wait())
	case <-client.Done():
		t.Fatalf("client Peer ended on a healthy connection: %v", client.Wait())
	case <-time.After(600 * time.Millisecond):
	}
	must(t, client.Call(testCtx(t, wait), "echo", []int{1}, nil))
}
