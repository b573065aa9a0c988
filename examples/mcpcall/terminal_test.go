package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// TestServerTextEscaped pins the review's finding 16: mcpcall printed
// what a server sends (a tool's name and description, a result's text) to
// the terminal as it is, so a server's escape sequences (here one that
// retitles the window and one that clears the screen: 4 ESC bytes reached
// the output) acted on the user's terminal. Now every control character
// but a line break or a tab is escaped, and so are bidirectional
// overrides and bytes that are not UTF-8.
func TestServerTextEscaped(t *testing.T) {
	const evil = "\x1b]0;owned\x07\x1b[2J\u202e\u009b"
	m := jsonrpc.NewMux()
	m.HandleFunc("initialize", func(context.Context, *jsonrpc.Request) (any, error) {
		return map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]string{"name": "x" + evil, "version": "1"}}, nil
	})
	m.HandleFunc("notifications/initialized", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	m.HandleFunc("tools/list", func(context.Context, *jsonrpc.Request) (any, error) {
		return map[string]any{"tools": []any{map[string]any{"name": "t", "description": "harmless" + evil, "inputSchema": map[string]any{"type": "object"}}}}, nil
	})
	m.HandleFunc("tools/call", func(context.Context, *jsonrpc.Request) (any, error) {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": "done\n\tline two" + evil}}}, nil
	})
	srv := &httprpc.SessionServer{Peer: jsonrpc.Options{Handler: m, Cancel: jsonrpc.MCPCancel}}
	hs := httptest.NewServer(srv)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		hs.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, config{url: hs.URL, tool: "t", args: "{}", version: "2025-11-25"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	t.Logf("mcpcall's output: %q", got)
	for _, bad := range []string{"\x1b", "\x07", "\u202e", "\u009b"} {
		if strings.Contains(got, bad) {
			t.Errorf("the output holds %q raw", bad)
		}
	}
	if !strings.Contains(got, `harmless\x1b]0;owned\x07\x1b[2J\u202e\u009b`) || !strings.Contains(got, "done\n\tline two") {
		t.Errorf("the output does not show the server's text escaped, line breaks and tabs kept: %q", got)
	}
	if c := clean("a\xffb\r\x7f"); c != `a\xffb\x0d\x7f` {
		t.Errorf("clean: %q", c)
	}
}
