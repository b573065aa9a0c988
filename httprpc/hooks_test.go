package httprpc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/peerwire/jsonrpc"
)

type baseKey struct{}

// hookedOptions returns Peer options whose BaseContext carries baseKey and
// whose OnConnect counts the Peers it sees (and refuses them when refuse
// is set), with a handler "values" that answers what its ctx carries.
func hookedOptions(seen *atomic.Int32, refuse bool) jsonrpc.Options {
	m := testMux()
	m.HandleFunc("values", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		return []any{ctx.Value(baseKey{}), ctx.Value(userKey{})}, nil
	})
	return jsonrpc.Options{
		Handler:     m,
		BaseContext: context.WithValue(context.Background(), baseKey{}, "base"),
		OnConnect: func(p *jsonrpc.Peer) {
			seen.Add(1)
			if refuse {
				p.Close()
			}
		},
	}
}

// asAlice is middleware that puts userKey "alice" in each request's context.
func asAlice(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, "alice")))
	})
}

// TestServerHonoursPeerHooks pins that httprpc.Server, like ws.Server, runs
// its Peer options' OnConnect and lays their BaseContext under the
// request's context: one jsonrpc.Options serves every transport. The
// Server replaced Peer.BaseContext with the request's, so a handler saw no
// base value (issue 31, point 7).
func TestServerHonoursPeerHooks(t *testing.T) {
	var seen atomic.Int32
	srv := &Server{Peer: hookedOptions(&seen, false)}
	w := serveRecorded(asAlice(srv), "POST", `{"jsonrpc":"2.0","id":1,"method":"values"}`,
		"Content-Type: application/json", "Accept: application/json")
	if body := w.Body.String(); w.Code != 200 || !strings.Contains(body, `"result":["base","alice"]`) {
		t.Fatalf("got %d %s, want the base's value and the request's: [\"base\",\"alice\"]", w.Code, body)
	}
	if n := seen.Load(); n != 1 {
		t.Fatalf("Peer.OnConnect ran %d times for one request, want 1", n)
	}
}

// TestSessionServerHonoursPeerHooks pins the same for SessionServer: each
// session's Peer runs Peer.OnConnect, before the SessionServer's own, and
// its handlers see the request's values over Peer.BaseContext's. It
// ignored Peer.OnConnect (0 of 1 sessions ran it) and replaced
// Peer.BaseContext (issue 31, point 7).
func TestSessionServerHonoursPeerHooks(t *testing.T) {
	var seen atomic.Int32
	srv := &SessionServer{Peer: hookedOptions(&seen, false), StartMethods: []string{"values"}}
	ts := startSessionsWith(t, srv, func(hs *httptest.Server) { hs.Config.Handler = asAlice(srv) })
	c := ts.dial(t, nil, DialOptions{})
	var got []string
	if err := c.Call(testCtx(t, wait), "values", nil, &got); err != nil || len(got) != 2 || got[0] != "base" || got[1] != "alice" {
		t.Fatalf("values: %q %v, want [base alice]", got, err)
	}
	ts.nextPeer(t) // the SessionServer's OnConnect ran too
	if n := seen.Load(); n != 1 {
		t.Fatalf("Peer.OnConnect ran %d times for one session, want 1", n)
	}
}

// TestSessionServerPeerOnConnectRefuses pins that a session whose Peer's
// OnConnect closes it is refused: the call that would start it fails
// with 403, the
// SessionServer's OnConnect is not told of it, and no session is left.
func TestSessionServerPeerOnConnectRefuses(t *testing.T) {
	var seen atomic.Int32
	srv := &SessionServer{Peer: hookedOptions(&seen, true), StartMethods: []string{"values"}}
	ts := startSessions(t, srv)
	c := ts.dial(t, nil, DialOptions{})
	err := c.Call(testCtx(t, wait), "values", nil, nil)
	if err == nil {
		t.Fatal("a call that starts a session refused by Peer.OnConnect succeeded")
	}
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusForbidden {
		t.Fatalf("the refused call: %v, want a *StatusError of 403", err)
	}
	select {
	case <-ts.peers:
		t.Fatal("the SessionServer's OnConnect saw a Peer that Peer.OnConnect refused")
	default:
	}
	if n := seen.Load(); n < 1 {
		t.Fatal("Peer.OnConnect never ran")
	}
	done := make(chan struct{})
	go func() { srv.wg.Wait(); close(done) }() // the refused session's goroutine has returned
	within(t, done, "the refused session's end")
	select {
	case cause := <-ts.ends:
		t.Fatalf("the SessionServer's OnDisconnect was told of a refused session (%v)", cause)
	default:
	}
	srv.mu.Lock()
	n := len(srv.sessions)
	srv.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d sessions left after refusals", n)
	}
}
