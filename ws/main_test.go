//go:build !js

package ws_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every blocking step of the tests.
const wait = 5 * time.Second

// testCtx returns a ctx that ends after d or with the test.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// testServer is a ws.Server on a loopback httptest server. The server-side
// Peer of each connection arrives on peers, in connection order.
type testServer struct {
	*ws.Server
	hs    *httptest.Server
	url   string // ws://127.0.0.1:port
	peers chan *jsonrpc.Peer
}

// startServer serves srv on 127.0.0.1 until the test ends, then shuts it
// down (ws first, since httptest does not know hijacked connections).
// tweak, if not nil, may adjust the httptest server before it starts.
func startServer(t testing.TB, srv *ws.Server, tweak func(*httptest.Server)) *testServer {
	ts := &testServer{Server: srv, peers: make(chan *jsonrpc.Peer, 64)}
	onConnect := srv.OnConnect
	srv.OnConnect = func(p *jsonrpc.Peer, r *http.Request) {
		if onConnect != nil {
			onConnect(p, r)
		}
		ts.peers <- p
	}
	ts.hs = httptest.NewUnstartedServer(srv)
	if tweak != nil {
		tweak(ts.hs)
	}
	ts.hs.Start()
	ts.url = "ws" + strings.TrimPrefix(ts.hs.URL, "http")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Server.Shutdown at cleanup: %v", err)
		}
		ts.hs.Close()
	})
	return ts
}

// nextPeer returns the server-side Peer of the next connection.
func (ts *testServer) nextPeer(t testing.TB) *jsonrpc.Peer {
	t.Helper()
	select {
	case p := <-ts.peers:
		return p
	case <-time.After(wait):
		t.Fatal("no connection reached the server's OnConnect")
		return nil
	}
}

// dial connects a client Peer serving h; it is closed and waited for when
// the test ends.
func (ts *testServer) dial(t testing.TB, h jsonrpc.Handler, opts *ws.DialOptions) *jsonrpc.Peer {
	t.Helper()
	var o ws.DialOptions
	if opts != nil {
		o = *opts
	}
	if o.HTTPClient == nil {
		o.HTTPClient = ts.hs.Client()
	}
	o.Peer.Handler = h
	p, err := ws.Dial(testCtx(t, wait), ts.url, o)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	cleanupPeer(t, p)
	return p
}

// rawDial connects a plain coder/websocket client, closed at the end of the
// test without a handshake.
func (ts *testServer) rawDial(t testing.TB, opts *websocket.DialOptions) *websocket.Conn {
	t.Helper()
	var o websocket.DialOptions
	if opts != nil {
		o = *opts
	}
	if o.HTTPClient == nil {
		o.HTTPClient = ts.hs.Client()
	}
	c, _, err := websocket.Dial(testCtx(t, wait), ts.url, &o)
	if err != nil {
		t.Fatalf("websocket.Dial: %v", err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// cleanupPeer closes p when the test ends and waits, within a bound, for it.
func cleanupPeer(t testing.TB, p *jsonrpc.Peer) {
	t.Cleanup(func() {
		p.Close()
		waitErr(t, "Peer.Wait at cleanup", p)
	})
}

// waitErr returns p.Wait()'s result, failing the test if it takes too long.
func waitErr(t testing.TB, what string, p *jsonrpc.Peer) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- p.Wait() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(wait):
		t.Fatalf("%s did not return within %v", what, wait)
		return nil
	}
}

// readRaw reads one message from a raw client, bounded in time.
func readRaw(t testing.TB, c *websocket.Conn) (websocket.MessageType, []byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return c.Read(ctx)
}

// writeRaw writes one text message from a raw client.
func writeRaw(t testing.TB, c *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("raw write: %v", err)
	}
}

// testMux serves echo (params back), fail (an application error 42) and
// sleep (params [ms]; ends early with its ctx).
func testMux(t testing.TB) *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	m.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		return r.Params, nil
	})
	m.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(42, "boom", nil)
	})
	jsonrpc.Register(m, "sleep", func(ctx context.Context, ms int) (int, error) {
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return ms, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
	return m
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("bad JSON %q: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("bad JSON %q: %v", b, err)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

// handlerWG tracks goroutines of raw http handlers, which httptest does not
// wait for once they hijack their connection.
type handlerWG struct{ sync.WaitGroup }

func (w *handlerWG) wait(t testing.TB) {
	done := make(chan struct{})
	go func() { w.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		t.Errorf("raw handlers did not return within %v", wait)
	}
}

func unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// withHandler returns *o (the defaults if o is nil) serving h.
func withHandler(o *jsonrpc.Options, h jsonrpc.Handler) jsonrpc.Options {
	var c jsonrpc.Options
	if o != nil {
		c = *o
	}
	c.Handler = h
	return c
}
