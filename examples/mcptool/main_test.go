package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/internal/testbin"
	"github.com/peerwire/jsonrpc/stdio"
)

// binPath is the mcptool binary that TestMain builds.
var binPath string

func TestMain(m *testing.M) { testbin.Main(m, "mcptool", &binPath) }

// client is a test's MCP client: a Peer on a running mcptool, serving
// roots/list and sampling/createMessage, and recording what the server
// sends it.
type client struct {
	t    *testing.T
	peer *jsonrpc.Peer
	conn *stdio.Conn

	mu       sync.Mutex
	progress map[string][]progressParams // by token
	logs     []string
	samples  []createMessageParams
	rootsAsk int
}

// stubSummary is what the stub model answers: deterministic, and showing
// that the file's text reached it.
func stubSummary(p createMessageParams) string {
	text := p.Messages[len(p.Messages)-1].Content.Text
	first, _, _ := strings.Cut(text, "\n")
	return "stub summary of " + strings.TrimPrefix(first, "Summarize the file ") + " (" +
		strings.Fields(text)[len(strings.Fields(text))-1] + " is the last word)"
}

// startClient starts mcptool with args and initializes it, declaring the
// roots (listing rootDir, unless empty) and sampling capabilities.
func startClient(t *testing.T, rootDir string, args ...string) *client {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = testbin.Env()
	var stderr testbin.Buffer
	cmd.Stderr = &stderr
	conn, err := stdio.Command(cmd, stdio.Options{Framing: stdio.Line})
	if err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, conn: conn, progress: map[string][]progressParams{}}
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "roots/list", func(context.Context, struct{}) (rootsListResult, error) {
		c.mu.Lock()
		c.rootsAsk++
		c.mu.Unlock()
		return rootsListResult{Roots: []root{{URI: (&url.URL{Scheme: "file", Path: rootDir}).String(), Name: "test root"}}}, nil
	})
	jsonrpc.Register(mux, "sampling/createMessage", func(_ context.Context, p createMessageParams) (any, error) {
		c.mu.Lock()
		c.samples = append(c.samples, p)
		c.mu.Unlock()
		return map[string]any{"role": "assistant", "model": "stub-1",
			"content": content{"text", stubSummary(p)}, "stopReason": "endTurn"}, nil
	})
	jsonrpc.Register(mux, "notifications/progress", func(_ context.Context, p progressParams) (any, error) {
		c.mu.Lock()
		c.progress[string(p.ProgressToken)] = append(c.progress[string(p.ProgressToken)], p)
		c.mu.Unlock()
		return nil, nil
	})
	jsonrpc.Register(mux, "notifications/message", func(_ context.Context, p logMessageParams) (any, error) {
		c.mu.Lock()
		c.logs = append(c.logs, p.Data.(string))
		c.mu.Unlock()
		return nil, nil
	})
	c.peer = jsonrpc.NewPeer(conn, jsonrpc.Options{Handler: mux, Cancel: jsonrpc.MCPCancel})
	t.Cleanup(func() {
		c.peer.Close()
		c.peer.Wait()
		if err := conn.Close(); err != nil {
			t.Errorf("mcptool exited with %v; stderr:\n%s", err, stderr.String())
		}
		if t.Failed() {
			t.Logf("mcptool's stderr:\n%s", stderr.String())
		}
	})

	caps := map[string]any{"sampling": struct{}{}}
	if rootDir != "" {
		caps["roots"] = map[string]bool{"listChanged": true}
	}
	var res initializeResult
	c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": caps,
		"clientInfo": implementation{Name: "mcptool-test", Version: "1"}}, &res)
	if res.ProtocolVersion != "2025-06-18" || res.ServerInfo.Name != "mcptool" {
		t.Fatalf("initialize = %+v, want version 2025-06-18 from mcptool", res)
	}
	if err := c.peer.Notify(context.Background(), "notifications/initialized", nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// call calls method, failing the test on an error.
func (c *client) call(method string, params, result any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.peer.Call(ctx, method, params, result); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

// callTool calls a tool with a progress token and returns its result.
func (c *client) callTool(ctx context.Context, name string, args any, token string) (callToolResult, error) {
	params := map[string]any{"name": name, "arguments": args}
	if token != "" {
		params["_meta"] = map[string]string{"progressToken": token}
	}
	var res callToolResult
	err := c.peer.Call(ctx, "tools/call", params, &res)
	return res, err
}

// makeRoot returns a directory with a few files, and a secret beside it.
func makeRoot(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "root")
	files := map[string]string{
		"root/notes.txt":     "Buy milk.\nCall the plumber about the leak.\nShip the release.\n",
		"root/docs/guide.md": "# Guide\n\nStart with go run.\n",
		"secret.txt":         "not for tools\n",
	}
	for name, text := range files {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestToolsList(t *testing.T) {
	c := startClient(t, makeRoot(t))
	var res toolsListResult
	c.call("tools/list", nil, &res)
	var names []string
	for _, td := range res.Tools {
		names = append(names, td.Name)
		if !json.Valid(td.InputSchema) || !strings.Contains(string(td.InputSchema), `"type":"object"`) {
			t.Errorf("%s: inputSchema %s is not an object schema", td.Name, td.InputSchema)
		}
	}
	if got, want := strings.Join(names, " "), "list_files read_file summarize_file wait"; got != want {
		t.Errorf("tools = %s, want %s", got, want)
	}
}

func TestToolCalls(t *testing.T) {
	dir := makeRoot(t)
	c := startClient(t, dir)
	for _, tc := range []struct {
		name    string
		tool    string
		args    any
		want    string // the result's text
		isError bool
	}{
		{"list the root", "list_files", map[string]any{},
			"docs/guide.md (28 bytes)\nlink.txt (symbolic link)\nnotes.txt (61 bytes)", false},
		{"list a directory", "list_files", map[string]any{"path": "docs"}, "docs/guide.md (28 bytes)", false},
		{"read", "read_file", map[string]any{"path": "notes.txt"},
			"Buy milk.\nCall the plumber about the leak.\nShip the release.\n", false},
		{"read a missing file", "read_file", map[string]any{"path": "nope.txt"},
			"openat nope.txt: no such file or directory", true},
		{"read outside the root with ..", "read_file", map[string]any{"path": "../secret.txt"},
			"openat ../secret.txt: path escapes from parent", true},
		{"read outside the root with an absolute path", "read_file", map[string]any{"path": filepath.Join(dir, "..", "secret.txt")},
			"openat " + filepath.Join(dir, "..", "secret.txt") + ": path escapes from parent", true},
		{"read outside the root through a symlink", "read_file", map[string]any{"path": "link.txt"},
			"openat link.txt: path escapes from parent", true},
		{"summarize", "summarize_file", map[string]any{"path": "notes.txt"},
			"stub summary of notes.txt in one sentence. (release. is the last word)", false},
		{"wait a little", "wait", map[string]any{"seconds": 0.05}, "waited 50ms", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := c.callTool(ctx, tc.tool, tc.args, "")
			if err != nil {
				t.Fatalf("tools/call %s: %v", tc.tool, err)
			}
			if len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != tc.want || res.IsError != tc.isError {
				t.Errorf("tools/call %s = %+v, want text %q, isError %v", tc.tool, res, tc.want, tc.isError)
			}
		})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rootsAsk != 1 {
		t.Errorf("the server asked roots/list %d times, want once (it caches the answer)", c.rootsAsk)
	}
}

// TestProtocolErrors: an unknown tool and bad arguments are JSON-RPC
// errors, not tool results; and tools need initialize first.
func TestProtocolErrors(t *testing.T) {
	c := startClient(t, makeRoot(t))
	ctx := context.Background()
	for _, tc := range []struct {
		tool string
		args any
		msg  string
	}{
		{"nope", map[string]any{}, "unknown tool: nope"},
		{"wait", map[string]any{"seconds": "ten"}, "invalid arguments: json: cannot unmarshal"},
		{"wait", map[string]any{"seconds": 1e6}, "invalid arguments: seconds must be between 0 and 600"},
		{"read_file", map[string]any{}, "invalid arguments: path is required"},
	} {
		_, err := c.callTool(ctx, tc.tool, tc.args, "")
		var e *jsonrpc.Error
		if !errors.As(err, &e) || e.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(e.Message, tc.msg) {
			t.Errorf("tools/call %s %v: %v, want code -32602 and %q", tc.tool, tc.args, err, tc.msg)
		}
	}
}

// TestSummarizeSamplesAndReportsProgress: the server's sampling request
// reaches the client with the file's text while the client's call runs,
// and progress arrives for the call's token.
func TestSummarizeSamplesAndReportsProgress(t *testing.T) {
	c := startClient(t, makeRoot(t))
	res, err := c.callTool(context.Background(), "summarize_file", map[string]any{"path": "docs/guide.md", "maxTokens": 50}, "sum-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := "stub summary of docs/guide.md in one sentence. (run. is the last word)"; res.Content[0].Text != want {
		t.Errorf("summary = %q, want %q", res.Content[0].Text, want)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.samples) != 1 || c.samples[0].MaxTokens != 50 || !strings.Contains(c.samples[0].Messages[0].Content.Text, "Start with go run.") {
		t.Errorf("sampling requests = %+v, want one with maxTokens 50 and the file's text", c.samples)
	}
	// Progress is written before the result, but a reply reaches its
	// caller without waiting for the notifications before it: wait for
	// them. The last step's progress is the result itself.
	c.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for c.progressCount(`"sum-1"`) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	c.mu.Lock()
	p := c.progress[`"sum-1"`]
	if len(p) != 2 || p[0].Progress != 1 || p[1].Progress != 2 || p[1].Total != 3 ||
		p[0].Message != "read docs/guide.md: 28 bytes" || p[1].Message != "asking the client's model for a summary" {
		t.Errorf("progress = %+v, want 1/3 (read) and 2/3 (asking the model)", p)
	}
}

func (c *client) progressCount(token string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.progress[token])
}

// TestWaitCancelled: the client gives up on a long wait; MCPCancel sends
// notifications/cancelled, the tool's ctx ends, and the tool stops and
// says so.
func TestWaitCancelled(t *testing.T) {
	c := startClient(t, makeRoot(t))
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.callTool(ctx, "wait", map[string]any{"seconds": 30}, "w")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("tools/call wait = %v, want the ctx's deadline", err)
	}
	var logs []string
	deadline := time.Now().Add(5 * time.Second)
	for len(logs) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		c.mu.Lock()
		logs = append([]string(nil), c.logs...)
		c.mu.Unlock()
	}
	if len(logs) != 1 || !regexp.MustCompile(`^wait: cancelled after [0-9.]+m?s of 30s; stopped$`).MatchString(logs[0]) {
		t.Fatalf("log messages = %q, want one saying the wait stopped early", logs)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("the tool took %v to say it stopped", elapsed)
	}
	if n := c.progressCount(`"w"`); n != 1 {
		t.Errorf("%d progress notifications in 1.5s, want 1 (one a second)", n)
	}
	// The server is still there.
	c.call("ping", nil, nil)
}

// TestRootFallback: a client without the roots capability gets the -root
// directory; without it either, a tool says there is no root.
func TestRootFallback(t *testing.T) {
	dir := makeRoot(t)
	c := startClient(t, "", "-root", filepath.Join(dir, "docs"))
	res, err := c.callTool(context.Background(), "list_files", nil, "")
	if err != nil || res.Content[0].Text != "guide.md (28 bytes)" {
		t.Errorf("list_files with -root = %+v, %v", res, err)
	}
	c = startClient(t, "")
	res, err = c.callTool(context.Background(), "read_file", map[string]any{"path": "notes.txt"}, "")
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "no root") {
		t.Errorf("read_file with no root = %+v, %v; want a tool error saying there is no root", res, err)
	}
}

// TestNotInitialized: tools/list before initialize is refused.
func TestNotInitialized(t *testing.T) {
	cmd := exec.Command(binPath)
	cmd.Env = testbin.Env()
	cmd.Stderr = &testbin.Buffer{}
	conn, err := stdio.Command(cmd, stdio.Options{Framing: stdio.Line})
	if err != nil {
		t.Fatal(err)
	}
	peer := jsonrpc.NewPeer(conn)
	defer func() { peer.Close(); peer.Wait(); conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = peer.Call(ctx, "tools/list", nil, nil)
	if !errors.Is(err, &jsonrpc.Error{Code: codeNotInitialized}) {
		t.Errorf("tools/list before initialize = %v, want code %d", err, codeNotInitialized)
	}
	if err := peer.Call(ctx, "ping", nil, nil); err != nil {
		t.Errorf("ping before initialize: %v", err)
	}
}
