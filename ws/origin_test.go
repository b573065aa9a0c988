//go:build !js

package ws_test

import (
	"net/http"
	"testing"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// TestOriginPolicy: by default only same-origin browser requests, and
// requests without an Origin header, are accepted; OriginPatterns allows
// others.
func TestOriginPolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		patterns []string
		origin   string // "self": the server's own origin; "": none
		ok       bool
	}{
		{"cross-site refused", nil, "http://evil.example", false},
		{"cross-site allowed by pattern", []string{"evil.example"}, "http://evil.example", true},
		{"pattern allows only its host", []string{"evil.example"}, "http://other.example", false},
		{"same origin", nil, "self", true},
		{"no Origin header", nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}, OriginPatterns: tc.patterns}, nil)
			h := http.Header{}
			switch tc.origin {
			case "":
			case "self":
				h.Set("Origin", ts.hs.URL)
			default:
				h.Set("Origin", tc.origin)
			}
			ctx := testCtx(t, wait)

			// Raw, to see the HTTP status of a refusal.
			c, resp, err := websocket.Dial(ctx, ts.url, &websocket.DialOptions{HTTPClient: ts.hs.Client(), HTTPHeader: h})
			if !tc.ok {
				if err == nil {
					c.CloseNow()
					t.Fatal("raw Dial accepted, want HTTP 403")
				}
				if resp == nil || resp.StatusCode != http.StatusForbidden {
					t.Errorf("raw Dial: %v, want HTTP 403", err)
				}
				if _, err := ws.Dial(ctx, ts.url, ws.DialOptions{HTTPClient: ts.hs.Client(), HTTPHeader: h}); err == nil {
					t.Error("ws.Dial accepted, want a refusal")
				}
				return
			}
			if err != nil {
				t.Fatalf("raw Dial: %v, want it accepted", err)
			}
			c.CloseNow()
			ts.nextPeer(t)
			p := ts.dial(t, nil, &ws.DialOptions{HTTPHeader: h})
			ts.nextPeer(t)
			must(t, p.Call(ctx, "echo", []int{1}, nil))
		})
	}
}
