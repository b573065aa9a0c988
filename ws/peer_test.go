//go:build !js

package ws_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// TestPeersBothWays runs two Go Peers over a loopback WebSocket: each side
// calls and notifies the other, from a handler and from outside one.
func TestPeersBothWays(t *testing.T) {
	serverNotes := make(chan string, 4)
	sm := testMux(t)
	// callback calls the client back from inside a handler.
	jsonrpc.Register(sm, "callback", func(ctx context.Context, s string) (string, error) {
		var got string
		err := jsonrpc.PeerFromContext(ctx).Call(ctx, "client.upper", []string{s}, &got)
		return "server saw " + got, err
	})
	jsonrpc.Register(sm, "note", func(_ context.Context, s string) (any, error) {
		serverNotes <- s
		return nil, nil
	})
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: sm}}, nil)

	clientNotes := make(chan string, 4)
	cm := jsonrpc.NewMux()
	jsonrpc.Register(cm, "client.upper", func(_ context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	})
	jsonrpc.Register(cm, "client.note", func(_ context.Context, s string) (any, error) {
		clientNotes <- s
		return nil, nil
	})
	client := ts.dial(t, cm, nil)
	server := ts.nextPeer(t) // the server's Peer for this client
	ctx := testCtx(t, wait)

	var got string
	must(t, client.Call(ctx, "callback", []string{"hi"}, &got))
	if got != "server saw HI" {
		t.Errorf("callback = %q, want %q", got, "server saw HI")
	}
	must(t, server.Call(ctx, "client.upper", []string{"direct"}, &got))
	if got != "DIRECT" {
		t.Errorf("server → client call = %q, want DIRECT", got)
	}
	var e *jsonrpc.Error
	if err := server.Call(ctx, "nope", nil, nil); !errors.As(err, &e) || e.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("unknown method on the client: %v, want -32601", err)
	}

	must(t, client.Notify(ctx, "note", []string{"to server"}))
	must(t, server.Notify(ctx, "client.note", []string{"to client"}))
	for _, c := range []struct {
		ch   chan string
		want string
	}{{serverNotes, "to server"}, {clientNotes, "to client"}} {
		select {
		case s := <-c.ch:
			if s != c.want {
				t.Errorf("notification = %q, want %q", s, c.want)
			}
		case <-ctx.Done():
			t.Fatalf("notification %q never arrived", c.want)
		}
	}
}

// TestBatchOverWebSocket sends a batch with an application error inside, and
// a batch of notifications only.
func TestBatchOverWebSocket(t *testing.T) {
	notes := make(chan int, 8)
	sm := testMux(t)
	jsonrpc.Register(sm, "count", func(_ context.Context, n int) (any, error) {
		notes <- n
		return nil, nil
	})
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: sm}}, nil)
	client := ts.dial(t, nil, nil)
	ctx := testCtx(t, wait)

	var r1, r3 []string
	elems := []jsonrpc.BatchElem{
		{Method: "echo", Params: []string{"one"}, Result: &r1},
		{Method: "fail", Params: []int{}},
		{Method: "echo", Params: []string{"three"}, Result: &r3},
		{Method: "count", Params: []int{0}, Notification: true},
	}
	must(t, client.Batch(ctx, elems))
	if elems[0].Error != nil || len(r1) != 1 || r1[0] != "one" {
		t.Errorf("element 0: %v, %v", r1, elems[0].Error)
	}
	var e *jsonrpc.Error
	if !errors.As(elems[1].Error, &e) || e.Code != 42 || e.Message != "boom" {
		t.Errorf("element 1 error = %v, want code 42 boom", elems[1].Error)
	}
	if elems[2].Error != nil || len(r3) != 1 || r3[0] != "three" {
		t.Errorf("element 2: %v, %v", r3, elems[2].Error)
	}

	only := []jsonrpc.BatchElem{
		{Method: "count", Params: []int{1}, Notification: true},
		{Method: "count", Params: []int{2}, Notification: true},
	}
	must(t, client.Batch(ctx, only))
	seen := map[int]bool{}
	for len(seen) < 3 {
		select {
		case n := <-notes:
			seen[n] = true
		case <-ctx.Done():
			t.Fatalf("notifications seen: %v, want 0, 1 and 2", seen)
		}
	}
	// The all-notification batch got no reply: a call still works and gets
	// its own reply, not a stray one.
	var r []string
	must(t, client.Call(ctx, "echo", []string{"after"}, &r))
	if len(r) != 1 || r[0] != "after" {
		t.Errorf("call after batch = %v", r)
	}
}

// TestCompression echoes 100 KiB with permessage-deflate on both sides.
func TestCompression(t *testing.T) {
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}, Conn: ws.Options{Compression: true}}, nil)
	client := ts.dial(t, nil, &ws.DialOptions{Conn: ws.Options{Compression: true}})

	big := strings.Repeat("compress me, ", 100<<10/13+1)[:100<<10]
	var got []string
	must(t, client.Call(testCtx(t, wait), "echo", []string{big}, &got))
	if len(got) != 1 || got[0] != big {
		t.Fatalf("echo of 100 KiB came back different (%d elements)", len(got))
	}

	// The extension really was negotiated.
	c, resp, err := websocket.Dial(testCtx(t, wait), ts.url, &websocket.DialOptions{
		HTTPClient:      ts.hs.Client(),
		CompressionMode: websocket.CompressionNoContextTakeover,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	ts.nextPeer(t) // drained so that the server's peers channel stays short
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.Contains(ext, "permessage-deflate") {
		t.Errorf("Sec-WebSocket-Extensions = %q, want permessage-deflate", ext)
	}
}

// TestCloseStatus pins which endings are clean: a close with 1000, 1001 or
// 1005 (see also TestCloseGoingAwayAndNoStatusAreClean), not a lost
// connection.
func TestCloseStatus(t *testing.T) {
	t.Run("client Close is clean for the server", func(t *testing.T) {
		ts := startServer(t, &ws.Server{}, nil)
		client := ts.dial(t, nil, nil)
		server := ts.nextPeer(t)
		must(t, client.Close())
		if err := waitErr(t, "server Wait", server); err != nil {
			t.Errorf("server Wait after client Close = %v, want nil", err)
		}
		if err := waitErr(t, "client Wait", client); err != nil {
			t.Errorf("client Wait after its Close = %v, want nil", err)
		}
	})
	t.Run("server going away is clean for the client", func(t *testing.T) {
		ts := startServer(t, &ws.Server{}, nil)
		client := ts.dial(t, nil, nil)
		ts.nextPeer(t)
		must(t, ts.Shutdown(testCtx(t, wait)))
		if err := waitErr(t, "client Wait", client); err != nil {
			t.Errorf("client Wait after server Shutdown (1001) = %v, want nil", err)
		}
	})
	t.Run("raw close 1000 is clean", func(t *testing.T) {
		ts := startServer(t, &ws.Server{}, nil)
		c := ts.rawDial(t, nil)
		server := ts.nextPeer(t)
		closed := make(chan error, 1)
		go func() { closed <- c.Close(websocket.StatusNormalClosure, "bye") }()
		if err := waitErr(t, "server Wait", server); err != nil {
			t.Errorf("server Wait after close 1000 = %v, want nil", err)
		}
		if err := <-closed; err != nil {
			t.Errorf("raw Close: %v", err)
		}
	})
	t.Run("lost connection is an error", func(t *testing.T) {
		ts := startServer(t, &ws.Server{}, nil)
		c := ts.rawDial(t, nil)
		server := ts.nextPeer(t)
		c.CloseNow() // TCP close, no close frame: 1006 abnormal closure
		if err := waitErr(t, "server Wait", server); err == nil {
			t.Error("server Wait after a connection lost without a close frame = nil, want an error")
		}
	})
}

// TestOnConnectBeforeHandlers pins that OnConnect's setup is in place for
// the first request, even one sent the moment the connection opens.
func TestOnConnectBeforeHandlers(t *testing.T) {
	var mu sync.Mutex
	joined := map[*jsonrpc.Peer]bool{}
	mux := jsonrpc.NewMux()
	mux.HandleFunc("joined", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		return joined[jsonrpc.PeerFromContext(ctx)], nil
	})
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: mux}, OnConnect: func(p *jsonrpc.Peer, r *http.Request) {
		time.Sleep(100 * time.Millisecond) // setup that takes a while
		mu.Lock()
		joined[p] = true
		mu.Unlock()
	}}, nil)
	client, err := ws.Dial(testCtx(t, wait), ts.url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { client.Close(); client.Wait() }()
	var ok bool
	if err := client.Call(testCtx(t, wait), "joined", nil, &ok); err != nil || !ok {
		t.Fatalf("first call saw joined = %v (err %v), want true", ok, err)
	}
}
