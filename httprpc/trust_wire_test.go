package httprpc

import (
	"net/http"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
)

// TestSessionOversizedNotificationBatch pins finding 15: a batch of 1,001
// notifications (over the Peer's MaxBatch, 1,000) got 202 and none was
// handled, and its refusal went out as a response on the GET stream,
// which carries no responses. Now the refusal is the POST's reply.
func TestSessionOversizedNotificationBatch(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	sid := startSession(t, ts)
	batch := "[" + strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","method":"echo"},`, 1001), ",") + "]"
	resp, body := rawRequest(t, ts, "POST", batch, ctJSON, acceptJSON, "Mcp-Session-Id: "+sid)
	if resp.StatusCode != 200 || !strings.Contains(body, `"code":-32600`) {
		t.Fatalf("1,001 notifications: %s %q, want the Invalid Request refusal as the reply", resp.Status, body)
	}
}

// TestSessionAcceptWeightZero pins finding 16: "Accept: application/json,
// text/event-stream;q=0" refuses event streams, and was answered with one.
func TestSessionAcceptWeightZero(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	sid := startSession(t, ts)
	for _, accept := range []string{"application/json, text/event-stream;q=0", "application/json, text/event-stream; q=0.0", "text/event-stream;q=0, application/json;q=0.5"} {
		resp, body := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`, ctJSON, "Accept: "+accept, "Mcp-Session-Id: "+sid)
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/json" {
			t.Errorf("Accept %q: %s, Content-Type %q (%q), want application/json", accept, resp.Status, ct, body)
		}
	}
	if resp, _ := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":1,"method":"echo"}`, ctJSON, "Accept: application/json;q=0, text/html", "Mcp-Session-Id: "+sid); resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("an Accept that refuses JSON and takes no event stream: %s, want 406", resp.Status)
	}
}

// TestSessionCORS pins finding 17: an origin that OriginPatterns allows
// could not use the endpoint from a browser: its preflight got 405, and no
// response let the page read it or its Mcp-Session-Id. Now the preflight
// is answered and every response carries the CORS headers.
func TestSessionCORS(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, OriginPatterns: []string{"app.example.com"}})
	const origin = "https://app.example.com"
	resp, _ := rawRequest(t, ts, "OPTIONS", "", "Origin: "+origin, "Access-Control-Request-Method: POST",
		"Access-Control-Request-Headers: content-type, mcp-session-id, mcp-protocol-version")
	h := resp.Header
	if resp.StatusCode/100 != 2 || h.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "mcp-session-id") {
		t.Fatalf("the preflight: %s %v", resp.Status, h)
	}
	resp, body := rawRequest(t, ts, "POST", initialize, ctJSON, acceptJSON, "Origin: "+origin)
	h = resp.Header
	if resp.StatusCode != 200 || h.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(h.Get("Access-Control-Expose-Headers"), SessionIDHeader) {
		t.Fatalf("a POST from the allowed origin: %s %q %v", resp.Status, body, h)
	}
	if resp, _ := rawRequest(t, ts, "OPTIONS", "", "Origin: https://evil.example", "Access-Control-Request-Method: POST"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a preflight of another origin: %s, want 403", resp.Status)
	}
}
