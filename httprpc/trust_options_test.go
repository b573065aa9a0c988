package httprpc

import (
	"net/http"
	"testing"

	"github.com/peerwire/jsonrpc"
)

// The options issue 29 added, which 3db20dd did not have: AllowedHosts,
// Identity.

// TestSessionAllowedHosts pins AllowedHosts: a server that lists its names
// (one behind a reverse proxy that passes its public Host on) answers to
// those, and to no other name, loopback ones included.
func TestSessionAllowedHosts(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, AllowedHosts: []string{"mcp.example.com", "*.mcp.example.com"}})
	for host, want := range map[string]int{
		"mcp.example.com":     200,
		"EU.mcp.example.com":  200,
		"mcp.example.com:443": 200,
		"localhost":           403,
		"example.com":         403,
	} {
		if resp, body := postAs(t, ts.hs.Client(), ts.url, host, "", initialize); resp.StatusCode != want {
			t.Errorf("Host %q: %s %q, want %d", host, resp.Status, body, want)
		}
	}
}

// TestSessionIdentityBinding pins Identity (finding 10's binding): a
// request authenticated as bob that names alice's session gets 404, as
// for a session that does not exist; alice's own requests go on; an
// Identity error is 403.
func TestSessionIdentityBinding(t *testing.T) {
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: whoMux()}, Identity: func(r *http.Request) (string, error) {
		u, _ := r.Context().Value(userKey{}).(string)
		if u == "" {
			return "", errNoUser
		}
		return u, nil
	}}
	ts := startSessionsWith(t, srv, withUser)
	alice := startAs(t, ts, "alice")
	if code, who := whoami(t, ts, alice, "alice"); code != 200 || who != `"alice"` {
		t.Fatalf("alice in her session: %d %s", code, who)
	}
	if code, who := whoami(t, ts, alice, "bob"); code != 404 {
		t.Fatalf("bob naming alice's session: %d %s, want 404", code, who)
	}
	if code, _ := whoami(t, ts, alice, ""); code != 403 {
		t.Fatalf("no user naming alice's session: %d, want 403", code)
	}
}
