package httprpc

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	dir := mcpPackages(t)
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{
		Handler: mcpMux(), Progress: jsonrpc.MCPProgress, Cancel: jsonrpc.MCPCancel,
	}})
	cmd := exec.CommandContext(testCtx(t, 3*wait), "node", "http-client.mjs", ts.url)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the SDK's client: %v", err)
	}
	if cause := ts.nextEnd(t); cause != nil || ts.Sessions() != 0 {
		t.Fatalf("the session ended with %v (%d left), want nil: the SDK's DELETE, a clean end", cause, ts.Sessions())
	}
}

// TestDialTypeScriptSDK pins interoperability the other way: Dial against
// the official MCP TypeScript SDK's StreamableHTTPServerTransport
// (.ci/mcp/http-server.mjs): initialize, tools/list, a push on the
// standalone stream, and a tools/call during which the server reports
// progress and calls the client back, then DELETE on Close. Skips as
// TestMCPTypeScriptSDK does.
func TestDialTypeScriptSDK(t *testing.T) {
	dir := mcpPackages(t)
	ctx := testCtx(t, 3*wait)
	cmd := exec.CommandContext(ctx, "node", "http-server.mjs")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the SDK's server printed no URL: %v", err)
	}

	client := jsonrpc.NewMux()
	client.HandleFunc("sampling/createMessage", func(context.Context, *jsonrpc.Request) (any, error) {
		return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "sampled"}, "model": "stub"}, nil
	})
	changed := make(chan struct{}, 1)
	client.HandleFunc("notifications/tools/list_changed", func(context.Context, *jsonrpc.Request) (any, error) {
		changed <- struct{}{}
		return nil, nil
	})
	c, err := Dial(ctx, strings.TrimSpace(url), DialOptions{
		ProtocolVersion: "2025-06-18",
		Peer:            jsonrpc.Options{Handler: client, Progress: jsonrpc.MCPProgress, Cancel: jsonrpc.MCPCancel},
	})
	if err != nil {
		t.Fatal(err)
	}
	cleanupPeer(t, c)
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	err = c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{"sampling": map[string]any{}},
		"clientInfo":      map[string]any{"name": "httprpc", "version": "1.0.0"},
	}, &init)
	if err != nil || init.ProtocolVersion != "2025-06-18" {
		t.Fatalf("initialize: %+v %v", init, err)
	}
	if err := c.Notify(ctx, "notifications/initialized", nil); err != nil {
		t.Fatal(err)
	}
	var tools struct{ Tools []struct{ Name string } }
	if err := c.Call(ctx, "tools/list", nil, &tools); err != nil || len(tools.Tools) != 1 {
		t.Fatalf("tools/list: %+v %v", tools, err)
	}
	within(t, changed, "notifications/tools/list_changed on the standalone stream")
	progress := 0
	pctx := jsonrpc.WithProgress(ctx, func(json.RawMessage) { progress++ })
	var res struct {
		Content []struct{ Text string }
	}
	if err := c.Call(pctx, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}}, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != "sampled" || progress != 2 {
		t.Fatalf("tools/call: %+v, %d progress", res, progress)
	}
}

// mcpPackages returns .ci/mcp if node and its packages are there; else it
// skips, or fails with REQUIRE_MCP=1.
func mcpPackages(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs("../.ci/mcp")
	_, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk"))
	}
	if err != nil {
		if os.Getenv("REQUIRE_MCP") == "1" {
			t.Fatalf("node or .ci/mcp/node_modules missing: %v", err)
		}
		t.Skipf("node or .ci/mcp/node_modules missing (run npm ci in .ci/mcp): %v", err)
	}
	return dir
}
