package httprpc

import (
	"net/http"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
)

// TestSessionWire pins the transport's answers to raw requests: each row
// is one request (SID stands for a live session's id, DEAD for a deleted
// one's) and the status, headers and body it must get.
func TestSessionWire(t *testing.T) {
	const (
		ct   = "Content-Type: application/json"
		both = "Accept: application/json, text/event-stream"
		js   = "Accept: application/json"
		call = `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`
		note = `{"jsonrpc":"2.0","method":"echo","params":[1]}`
	)
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, MaxBodySize: 1024})
	sid := startSession(t, ts)
	dead := startSession(t, ts)
	if resp, _ := rawRequest(t, ts, "DELETE", "", "Mcp-Session-Id: "+dead); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	sidH, deadH := "Mcp-Session-Id: "+sid, "Mcp-Session-Id: "+dead
	tests := []struct {
		name    string
		method  string
		body    string
		headers []string
		status  int
		ctype   string // the response's Content-Type, if checked
		want    string // a JSON body, or for an event stream a substring
	}{
		{"call as JSON", "POST", call, []string{ct, js, sidH}, 200, "application/json", `{"jsonrpc":"2.0","id":1,"result":[1]}`},
		{"call as an event stream", "POST", call, []string{ct, both, sidH}, 200, "text/event-stream", `data: {"jsonrpc":"2.0","id":1,"result":[1]}`},
		{"batch as JSON", "POST", `[` + call + `,` + note + `]`, []string{ct, js, sidH}, 200, "application/json", `[{"jsonrpc":"2.0","id":1,"result":[1]}]`},
		{"notification: 202", "POST", note, []string{ct, both, sidH}, 202, "", ""},
		{"response: 202", "POST", `{"jsonrpc":"2.0","id":99,"result":1}`, []string{ct, both, sidH}, 202, "", ""},
		{"notifications only: 202", "POST", `[` + note + `,` + note + `]`, []string{ct, both, sidH}, 202, "", ""},
		{"parse error", "POST", `{bad`, []string{ct, js, sidH}, 200, "application/json", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{"empty batch", "POST", `[]`, []string{ct, js, sidH}, 200, "application/json", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{"invalid object without id is answered", "POST", `{"jsonrpc":"2.0","method":1}`, []string{ct, js, sidH}, 200, "application/json", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{"unknown session", "POST", call, []string{ct, both, "Mcp-Session-Id: 00ff"}, 404, "", ""},
		{"deleted session", "POST", call, []string{ct, both, deadH}, 404, "", ""},
		{"deleted session, GET", "GET", "", []string{"Accept: text/event-stream", deadH}, 404, "", ""},
		{"deleted session, DELETE again", "DELETE", "", []string{deadH}, 404, "", ""},
		{"notification without a session", "POST", note, []string{ct, both}, 400, "", ""},
		{"GET without a session", "GET", "", []string{"Accept: text/event-stream"}, 400, "", ""},
		{"DELETE without a session", "DELETE", "", nil, 400, "", ""},
		{"foreign Origin", "POST", call, []string{ct, both, sidH, "Origin: http://evil.example"}, 403, "", ""},
		{"foreign Origin, new session", "POST", call, []string{ct, both, "Origin: http://evil.example"}, 403, "", ""},
		{"null Origin", "GET", "", []string{"Accept: text/event-stream", sidH, "Origin: null"}, 403, "", ""},
		{"bad protocol version", "POST", call, []string{ct, both, sidH, "MCP-Protocol-Version: 1999-01-01"}, 400, "", ""},
		{"known protocol version", "POST", call, []string{ct, js, sidH, "MCP-Protocol-Version: 2025-06-18"}, 200, "application/json", `{"jsonrpc":"2.0","id":1,"result":[1]}`},
		{"body too large", "POST", `{"jsonrpc":"2.0","id":1,"method":"echo","params":["` + strings.Repeat("x", 2000) + `"]}`, []string{ct, both, sidH}, 413, "", ""},
		{"wrong content type", "POST", call, []string{"Content-Type: text/plain", both, sidH}, 415, "", ""},
		{"accepts neither", "POST", call, []string{ct, "Accept: text/html", sidH}, 406, "", ""},
		{"GET that takes no event stream", "GET", "", []string{"Accept: application/json", sidH}, 406, "", ""},
		{"PUT", "PUT", call, []string{ct, both, sidH}, 405, "", ""},
		{"malformed Last-Event-ID", "GET", "", []string{"Accept: text/event-stream", sidH, "Last-Event-ID: x"}, 400, "", ""},
		{"Last-Event-ID of no stream", "GET", "", []string{"Accept: text/event-stream", sidH, "Last-Event-ID: 999-1"}, 410, "", ""},
		{"Last-Event-ID past the stream's end", "GET", "", []string{"Accept: text/event-stream", sidH, "Last-Event-ID: 0-99"}, 410, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := rawRequest(t, ts, tt.method, tt.body, tt.headers...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %s, want %d; body %q", resp.Status, tt.status, body)
			}
			if tt.ctype != "" && resp.Header.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), tt.ctype)
			}
			switch {
			case tt.status == 202 && body != "":
				t.Errorf("202 with a body: %q", body)
			case tt.ctype == "application/json" && !jsonEqual(t, body, tt.want):
				t.Errorf("body %s\nwant %s", body, tt.want)
			case tt.ctype == "text/event-stream" && !strings.Contains(body, tt.want):
				t.Errorf("event stream %q\nwant it to hold %q", body, tt.want)
			}
			if tt.status == 200 && resp.Header.Get(SessionIDHeader) != sid {
				t.Errorf("Mcp-Session-Id %q, want the session's", resp.Header.Get(SessionIDHeader))
			}
		})
	}
}

// TestSessionIDs pins the session ids: visible ASCII, 128 bits or more,
// different for each session, and a POST without one starts a new session.
func TestSessionIDs(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	seen := map[string]bool{}
	for range 20 {
		id := startSession(t, ts)
		if len(id) < 32 || seen[id] {
			t.Fatalf("id %q: short or repeated", id)
		}
		for _, c := range []byte(id) {
			if c < 0x21 || c > 0x7e {
				t.Fatalf("id %q holds %q, not visible ASCII", id, c)
			}
		}
		seen[id] = true
	}
	if n := ts.Sessions(); n != 20 {
		t.Fatalf("%d sessions, want 20", n)
	}
}

// TestSessionTooMany pins MaxSessions: past it a new session gets 503 with
// a JSON-RPC error body, and the sessions alive go on.
func TestSessionTooMany(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, MaxSessions: 2})
	sid := startSession(t, ts)
	startSession(t, ts)
	resp, body := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":1,"method":"echo"}`, "Content-Type: application/json")
	if resp.StatusCode != 503 || !jsonEqual(t, body, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"too many sessions"}}`) {
		t.Fatalf("third session: %s %s", resp.Status, body)
	}
	resp, body = rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`,
		"Content-Type: application/json", "Accept: application/json", "Mcp-Session-Id: "+sid)
	if resp.StatusCode != 200 {
		t.Fatalf("a live session after the refusal: %s %s", resp.Status, body)
	}
}

// TestSessionOriginPatterns pins the Origin check: the endpoint's own host
// and OriginPatterns pass, other hosts get 403.
func TestSessionOriginPatterns(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, OriginPatterns: []string{"*.example.com"}})
	host := strings.TrimPrefix(ts.hs.URL, "http://")
	for origin, want := range map[string]int{
		"http://" + host:             200,
		"https://app.example.com":    200,
		"https://APP.Example.com":    200,
		"https://example.com.evil.x": 403,
		"http://localhost:1":         403,
		"not a url":                  403,
	} {
		resp, body := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":1,"method":"echo"}`,
			"Content-Type: application/json", "Accept: application/json", "Origin: "+origin)
		if resp.StatusCode != want {
			t.Errorf("Origin %q: %s %q, want %d", origin, resp.Status, body, want)
		}
	}
}
