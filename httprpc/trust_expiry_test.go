package httprpc

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peerwire/jsonrpc"
)

const ctJSON, acceptJSON = "Content-Type: application/json", "Accept: application/json"

// holdMux serves initialize and hold, which waits until its call is
// cancelled.
func holdMux(started chan<- struct{}) *jsonrpc.Mux {
	m := testMux()
	m.HandleFunc("hold", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		if started != nil {
			started <- struct{}{}
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return m
}

// TestSessionCancelledCallExpires pins finding 2, on a fake clock: a call
// cancelled in the MCP dialect gets no reply, and the session kept
// awaiting it: with IdleTimeout 200 ms, 20 of 20 such sessions (whose
// clients left their call's stream and cancelled it) lived on, and with
// MaxSessions 20 every new client got 503. Now they expire, and a new
// client gets a session.
func TestSessionCancelledCallExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{}, 1)
		srv := &SessionServer{
			Peer:        jsonrpc.Options{Handler: holdMux(started), Cancel: jsonrpc.MCPCancel},
			IdleTimeout: 200 * time.Millisecond, MaxSessions: 20,
		}
		for i := range 20 {
			sid := serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON).Header().Get(SessionIDHeader)
			sidH := "Mcp-Session-Id: " + sid
			ctx, leave := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				serveRecordedReq(srv, serveRequest(ctx, []byte(`{"jsonrpc":"2.0","id":5,"method":"hold"}`), ctJSON, "Accept: text/event-stream", sidH))
				close(done)
			}()
			<-started
			leave() // the client lets the call's stream go
			<-done
			if w := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`, ctJSON, acceptJSON, sidH); w.Code != 202 {
				t.Fatalf("session %d's cancel: %d", i, w.Code)
			}
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := srv.Sessions(); n != 0 {
			t.Errorf("%d of 20 sessions whose call was cancelled are alive after 3 s with IdleTimeout 200 ms", n)
		}
		if w := serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON); w.Code != 200 {
			t.Errorf("a new client: %d %q", w.Code, w.Body)
		}
		srv.Shutdown(context.Background())
	})
}

// TestSessionCancelledCallFreed pins finding 2's memory: each cancelled
// call kept about 265 B for the session's life (its stream, awaiting a
// reply that never comes). 5,000 calls posted as JSON, left by their
// client and cancelled, measured through the runtime's heap.
func TestSessionCancelledCallFreed(t *testing.T) {
	const n = 5000
	started := make(chan struct{}, 1)
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: holdMux(started), Cancel: jsonrpc.MCPCancel}}
	defer srv.Shutdown(context.Background())
	sid := serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON).Header().Get(SessionIDHeader)
	sidH := "Mcp-Session-Id: " + sid
	cancelOne := func(i int) {
		ctx, leave := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			serveRecordedReq(srv, serveRequest(ctx, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"hold"}`, i)), ctJSON, acceptJSON, sidH))
			close(done)
		}()
		within(t, started, "the held call's handler")
		leave() // the client goes away
		<-done
		note := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, i)
		if w := serveRecorded(srv, "POST", note, ctJSON, acceptJSON, sidH); w.Code != 202 {
			t.Fatalf("the cancel: %d %q", w.Code, w.Body)
		}
	}
	for i := range 100 { // warm up: pools, maps
		cancelOne(i)
	}
	before := heap()
	for i := range n {
		cancelOne(100 + i)
	}
	serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":"sync","method":"echo"}`, ctJSON, acceptJSON, sidH)
	per := (int64(heap()) - int64(before)) / n
	t.Logf("heap: %d bytes kept per cancelled call (%d calls)", per, n)
	if per > 64 {
		t.Fatalf("%d bytes kept per cancelled call, want none (at most 64 for noise)", per)
	}
}

// TestSessionStartMethods pins finding 11's first half: a session starts
// with a request of StartMethods only (MCP's initialize by default); a
// POST without a session id holding anything else gets 400, as the
// transport says, and starts nothing.
func TestSessionStartMethods(t *testing.T) {
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}}
	defer srv.Shutdown(context.Background())
	for body, want := range map[string]int{
		`{"jsonrpc":"2.0","id":1,"method":"echo"}`:                                                  400,
		`{"jsonrpc":"2.0","method":"initialize"}`:                                                   400,
		`[{"jsonrpc":"2.0","id":1,"method":"initialize"},{"jsonrpc":"2.0","id":2,"method":"echo"}]`: 400,
		`{bad`:     400,
		initialize: 200,
	} {
		if w := serveRecorded(srv, "POST", body, ctJSON, acceptJSON); w.Code != want {
			t.Errorf("%s without a session id: %d %q, want %d", body, w.Code, w.Body, want)
		}
	}
	if n := srv.Sessions(); n != 1 {
		t.Fatalf("%d sessions, want the one initialize started", n)
	}
}

// TestSessionUnusedExpiry pins finding 11's expiry, on a fake clock: a
// session whose client never came back after initialize lived for
// IdleTimeout (10 min); now it ends after UnusedTimeout (30 s), while one
// whose client made a call lives on. A notification is no use (the
// review's finding 4: one notification after initialize gave a session
// IdleTimeout): a session that got only MCP's notifications/initialized
// ends after UnusedTimeout too.
func TestSessionUnusedExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}}
		unused := serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON).Header().Get(SessionIDHeader)
		notified := serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON).Header().Get(SessionIDHeader)
		used := serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON).Header().Get(SessionIDHeader)
		if w := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, ctJSON, acceptJSON, "Mcp-Session-Id: "+notified); w.Code != 202 {
			t.Fatalf("the notified session's notification: %d", w.Code)
		}
		if w := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":2,"method":"echo"}`, ctJSON, acceptJSON, "Mcp-Session-Id: "+used); w.Code != 200 {
			t.Fatalf("the used session's call: %d", w.Code)
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		for _, sid := range []string{unused, notified} {
			if w := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","method":"echo"}`, ctJSON, acceptJSON, "Mcp-Session-Id: "+sid); w.Code != 404 {
				t.Errorf("an unused session after 31 s: %d, want 404 (expired)", w.Code)
			}
		}
		if n := srv.Sessions(); n != 1 {
			t.Errorf("%d sessions after 31 s, want the used one", n)
		}
		srv.Shutdown(context.Background())
	})
}

// TestSessionPerClientBound pins finding 11's per-client bound: one client
// (one address) gets at most MaxSessionsPerClient (100) sessions in use;
// the next gets 429, and a client of another address still gets one.
func TestSessionPerClientBound(t *testing.T) {
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}}
	defer srv.Shutdown(context.Background())
	for i := range 100 {
		w := serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON)
		if w.Code != 200 {
			t.Fatalf("session %d: %d", i, w.Code)
		}
		if w := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":2,"method":"echo"}`, ctJSON, acceptJSON, "Mcp-Session-Id: "+w.Header().Get(SessionIDHeader)); w.Code != 200 {
			t.Fatalf("session %d's call: %d", i, w.Code)
		}
	}
	if w := serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON); w.Code != 429 {
		t.Fatalf("the 101st session of one client: %d %q, want 429", w.Code, w.Body)
	}
	req := httptest.NewRequest("POST", "/mcp", nil)
	req = serveRequest(req.Context(), []byte(initialize), ctJSON, acceptJSON)
	req.RemoteAddr = "198.51.100.7:4000"
	if w := serveRecordedReq(srv, req); w.Code != 200 {
		t.Fatalf("another client: %d", w.Code)
	}
}

// TestSessionRefusalCostsNothing pins finding 11's cost: each POST refused
// with 503 (past MaxSessions) built a session and armed its timer,
// holding about 1 KiB until IdleTimeout (20,000 refusals held +20 MiB).
// Now a refusal builds nothing: 20,000 of them, heap measured through the
// runtime.
func TestSessionRefusalCostsNothing(t *testing.T) {
	const n = 20000
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, MaxSessions: 1}
	defer srv.Shutdown(context.Background())
	serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON)
	for range 100 {
		serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON)
	}
	before := heap()
	for i := range n {
		if w := serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON); w.Code != 503 {
			t.Fatalf("refusal %d: %d", i, w.Code)
		}
	}
	per := (int64(heap()) - int64(before)) / n
	t.Logf("heap: %d bytes kept per refused POST (%d refusals)", per, n)
	if per > 16 {
		t.Fatalf("%d bytes kept per refused POST, want none", per)
	}
}
