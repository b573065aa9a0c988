package httprpc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
)

var errNoUser = errors.New("no user")

// whoMux serves initialize and whoami (the user in the ctx's values).
func whoMux() *jsonrpc.Mux {
	m := testMux()
	m.HandleFunc("whoami", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		return ctx.Value(userKey{}), nil
	})
	return m
}

// withUser puts middleware before the server that takes the user from
// "Authorization: Bearer NAME" into the request's context.
func withUser(hs *httptest.Server) {
	h := hs.Config.Handler
	hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			r = r.WithContext(context.WithValue(r.Context(), userKey{}, u))
		}
		h.ServeHTTP(w, r)
	})
}

// startAs starts a session as user and returns its id.
func startAs(t *testing.T, ts *sessionServer, user string) string {
	t.Helper()
	resp, body := rawRequest(t, ts, "POST", initialize, "Content-Type: application/json", "Accept: application/json", "Authorization: Bearer "+user)
	if resp.StatusCode != 200 {
		t.Fatalf("starting %s's session: %s %q", user, resp.Status, body)
	}
	return resp.Header.Get(SessionIDHeader)
}

// whoami calls whoami in session sid as user ("" for none), and returns
// the status and the result.
func whoami(t *testing.T, ts *sessionServer, sid, user string) (int, string) {
	t.Helper()
	h := []string{"Content-Type: application/json", "Accept: application/json", "Mcp-Session-Id: " + sid}
	if user != "" {
		h = append(h, "Authorization: Bearer "+user)
	}
	resp, body := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":7,"method":"whoami"}`, h...)
	if resp.StatusCode != 200 {
		return resp.StatusCode, body
	}
	_, res, _ := strings.Cut(body, `"result":`)
	return 200, strings.TrimSuffix(res, "}")
}

// TestSessionHandlerSeesItsRequest pins finding 10's other half: a call's
// handler sees the values of the request that carried it, not those of
// the request that started the session: a call authenticated as bob in a
// session alice started runs as bob (at 3db20dd it ran as alice).
func TestSessionHandlerSeesItsRequest(t *testing.T) {
	ts := startSessionsWith(t, &SessionServer{Peer: jsonrpc.Options{Handler: whoMux()}}, withUser)
	sid := startAs(t, ts, "alice")
	if code, who := whoami(t, ts, sid, "alice"); code != 200 || who != `"alice"` {
		t.Fatalf("alice: %d %s", code, who)
	}
	if code, who := whoami(t, ts, sid, "bob"); code != 200 || who != `"bob"` {
		t.Fatalf("bob's request in alice's session ran as %s (%d), want bob", who, code)
	}
}
