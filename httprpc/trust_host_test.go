package httprpc

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
)

// postAs posts body to url with the given Host and Origin headers (none
// for ""), and returns the response with its body read.
func postAs(t *testing.T, hc *http.Client, url, host, origin, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t, wait), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`

// TestSessionRefusesReboundHost pins finding 1: a page whose name an
// attacker rebinds to 127.0.0.1 sends that name as both Host and Origin;
// with the defaults, a SessionServer listening on loopback ran its
// handler. Now it answers 403, and takes a page of its own loopback name.
func TestSessionRefusesReboundHost(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	_, port, _ := net.SplitHostPort(ts.hs.Listener.Addr().String())
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"rebind.attacker.example", "http://rebind.attacker.example", 403},
		{"rebind.attacker.example:" + port, "", 403},
		{"evil.example.com", "http://evil.example.com", 403},
		{"localhost:" + port, "http://localhost:" + port, 200},
		{"127.0.0.1:" + port, "", 200},
		{"[::1]:" + port, "http://[::1]:" + port, 200},
		{"localhost:" + port, "http://rebind.attacker.example", 403},
	} {
		resp, body := postAs(t, ts.hs.Client(), ts.url, tc.host, tc.origin, initialize)
		if resp.StatusCode != tc.want {
			t.Errorf("Host %q, Origin %q: %s %q, want %d", tc.host, tc.origin, resp.Status, body, tc.want)
		}
	}
}

// TestPostRefusesReboundHost pins the same for plain POST's Server.
func TestPostRefusesReboundHost(t *testing.T) {
	m := jsonrpc.NewMux()
	m.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) { return r.Params, nil })
	hs := httptest.NewServer(&Server{Peer: jsonrpc.Options{Handler: m}})
	defer hs.Close()
	const call = `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`
	if resp, body := postAs(t, hs.Client(), hs.URL, "rebind.attacker.example", "http://rebind.attacker.example", call); resp.StatusCode != 403 {
		t.Errorf("a rebound page: %s %q, want 403", resp.Status, body)
	}
	if resp, body := postAs(t, hs.Client(), hs.URL, "localhost", "", call); resp.StatusCode != 200 {
		t.Errorf("localhost: %s %q, want 200", resp.Status, body)
	}
}
