package httprpc

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/peerwire/jsonrpc"
)

// mcpMux is a minimal MCP server: initialize, tools/list, and tools/call
// of "ask", which reports progress twice and, between, asks the client to
// sample (sampling/createMessage) and returns what it answered.
func mcpMux() *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	m.HandleFunc("initialize", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := json.Unmarshal(r.Params, &p); err != nil {
			return nil, err
		}
		return map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "httprpc-test", "version": "1.0.0"},
		}, nil
	})
	m.HandleFunc("notifications/initialized", func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	m.HandleFunc("tools/list", func(context.Context, *jsonrpc.Request) (any, error) {
		return map[string]any{"tools": []any{map[string]any{"name": "ask", "inputSchema": map[string]any{"type": "object"}}}}, nil
	})
	m.HandleFunc("tools/call", func(ctx context.Context, r *jsonrpc.Request) (any, error) {
		if err := jsonrpc.ReportProgress(ctx, map[string]any{"progress": 1, "total": 2}); err != nil {
			return nil, err
		}
		var sampled struct {
			Content struct{ Text string } `json:"content"`
		}
		err := jsonrpc.PeerFromContext(ctx).Call(ctx, "sampling/createMessage", map[string]any{
			"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "hi"}}},
			"maxTokens": 10,
		}, &sampled)
		if err != nil {
			return nil, err
		}
		if err := jsonrpc.ReportProgress(ctx, map[string]any{"progress": 2, "total": 2}); err != nil {
			return nil, err
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": sampled.Content.Text}}}, nil
	})
	return m
}

// TestMCPTypeScriptSDK pins interoperability with the official MCP
// TypeScript SDK's StreamableHTTPClientTransport (.ci/mcp/http-client.mjs):
// a session started by initialize, a call that calls back and reports
// progress over its POST's stream, and DELETE. It needs node and the
// packages of .ci/mcp (npm ci there); without them it skips, unless
// REQUIRE_MCP=1 (as in CI), when it fails.
func TestMCPTypeScriptSDK(t *testing.T) {
	dir, _ := filepath.Abs("../.ci/mcp")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk"))
	}
	if err != nil {
		if os.Getenv("REQUIRE_MCP") == "1" {
			t.Fatalf("node or .ci/mcp/node_modules missing: %v", err)
		}
		t.Skipf("node or .ci/mcp/node_modules missing (run npm ci in .ci/mcp): %v", err)
	}
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{
		Handler: mcpMux(), Progress: jsonrpc.MCPProgress, Cancel: jsonrpc.MCPCancel,
	}})
	cmd := exec.CommandContext(testCtx(t, 2*wait*3), node, "http-client.mjs", ts.url)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the SDK's client: %v", err)
	}
	if cause := ts.nextEnd(t); !errors.Is(cause, ErrSessionDeleted) {
		t.Fatalf("the session ended with %v, want ErrSessionDeleted (the SDK's DELETE)", cause)
	}
}
