package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is an MCP server with one tool, form, which asks the client to
// fill in a form (elicitation/create) while its call runs and returns
// what came back.
func server(t *testing.T) string {
	m := jsonrpc.NewMux()
	m.HandleFunc("initialize", func(context.Context, *jsonrpc.Request) (any, error) {
		return map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]string{"name": "test", "version": "1"}}, nil
	})
	m.HandleFunc("notifications/initialized", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	m.HandleFunc("tools/list", func(context.Context, *jsonrpc.Request) (any, error) {
		return map[string]any{"tools": []any{map[string]any{"name": "form", "description": "asks for a form", "inputSchema": map[string]any{"type": "object"}}}}, nil
	})
	m.HandleFunc("tools/call", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		var res json.RawMessage
		err := jsonrpc.PeerFromContext(ctx).Call(ctx, "elicitation/create", map[string]any{
			"message": "who?",
			"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string", "default": "Ada"},
				"age":  map[string]any{"type": "integer", "default": 36},
				"note": map[string]any{"type": "string"},
			}},
		}, &res)
		if err != nil {
			return nil, err
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": string(res)}}}, nil
	})
	srv := &httprpc.SessionServer{Peer: jsonrpc.Options{Handler: m, Cancel: jsonrpc.MCPCancel, Progress: jsonrpc.MCPProgress}}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		hs.Close()
	})
	return hs.URL
}

// TestCallWithElicitation runs mcpcall's session: the tools listed, the
// tool called, its form answered with the schema's defaults, or declined.
func TestCallWithElicitation(t *testing.T) {
	url := server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, config{url: url, tool: "form", args: "{}", version: "2025-11-25"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"tool form: asks for a form", `elicitation "who?": accepted with the defaults`, `"action":"accept"`, `"age":36`, `"name":"Ada"`} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "note") {
		t.Errorf("a field with no default was filled in:\n%s", got)
	}
	out.Reset()
	if err := run(ctx, config{url: url, tool: "form", args: "{}", version: "2025-11-25", decline: true}, &out); err != nil || !strings.Contains(out.String(), `"action":"decline"`) {
		t.Fatalf("declined: %v\n%s", err, out.String())
	}
	if err := run(ctx, config{url: url, tool: "nope", args: "{", version: "2025-11-25"}, &out); err == nil || errors.Is(err, errToolFailed) {
		t.Fatalf("bad -args: %v", err)
	}
}
