package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The MCP session (agent -mcp DIR): the host drives two reference MCP
// servers, the npm packages @modelcontextprotocol/server-everything and
// @modelcontextprotocol/server-filesystem installed under DIR (a
// node_modules directory), as a desktop agent does: each a node child
// process on line-framed JSON-RPC, initialized with the roots, sampling and
// elicitation capabilities, whose callbacks the host serves while its own
// call to the server is still running; and server-everything once more
// over Streamable HTTP (mcphttp.go).

const (
	everythingScript = "@modelcontextprotocol/server-everything/dist/index.js"
	filesystemScript = "@modelcontextprotocol/server-filesystem/dist/index.js"
	// mcpCallTimeout bounds each call to an MCP server.
	mcpCallTimeout = 20 * time.Second
)

// runMCP runs the MCP session, writing its transcript to w.
func runMCP(w io.Writer, modules string) error {
	out := &transcript{w: w}
	h := &host{out: out, log: slog.New(slog.NewTextHandler(out.logWriter(), &slog.HandlerOptions{ReplaceAttr: withoutTime}))}
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("the MCP session needs Node.js: %w", err)
	}
	for _, script := range []string{everythingScript, filesystemScript} {
		if _, err := os.Stat(filepath.Join(modules, script)); err != nil {
			return usageError(fmt.Sprintf("-mcp %s: %v (install the servers: cd .ci/mcp && npm ci)", modules, err))
		}
	}
	dir, err := workDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	roots := []mcpRoot{{URI: (&url.URL{Scheme: "file", Path: dir}).String(), Name: "agent workspace"}}

	out.printf("agent host (pid %d): driving the reference MCP servers under %s with %s\n", os.Getpid(), modules, node)
	out.section("server-everything: initialize, tools, callbacks, progress, logs, cancellation")
	every, err := h.startMCP("everything", roots, node, filepath.Join(modules, everythingScript), "stdio")
	if err != nil {
		return err
	}
	defer every.close()
	if err := h.everything(every); err != nil {
		return err
	}

	out.section("server-everything over Streamable HTTP: the same session through httprpc.Dial")
	everyHTTP, err := h.everythingOverHTTP(roots, node, filepath.Join(modules, everythingScript))
	if err != nil {
		return err
	}
	defer everyHTTP.close()

	out.section("server-filesystem: files under the root the host lists")
	fsys, err := h.startMCP("filesystem", roots, node, filepath.Join(modules, filesystemScript), dir)
	if err != nil {
		return err
	}
	defer fsys.close()
	if err := h.filesystem(fsys, dir); err != nil {
		return err
	}

	out.section("server-filesystem given a directory that does not exist: it crashes")
	if err := h.crashingMCP(node, modules, roots); err != nil {
		return err
	}

	out.section("Shutting down: close each server's stdin and reap it")
	for _, s := range []*mcpServer{every, everyHTTP, fsys} {
		st, err := s.close()
		out.printf("  %s exited with status %d%s\n", s.name, st.ExitCode(), errNote(err))
	}
	out.printf("\nagent host: MCP session done, no server left running\n")
	return nil
}

// workDir makes the directory the host lists as its root, with two files.
func workDir() (string, error) {
	dir, err := os.MkdirTemp("", "agent-mcp-")
	if err != nil {
		return "", err
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return "", err
	}
	for name, text := range map[string]string{
		"notes.txt": "Buy milk.\nCall the plumber about the leak.\nShip the release.\n",
		"todo.md":   "- write the MCP example\n- run it in CI\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func mcpCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), mcpCallTimeout)
}

// everything drives server-everything.
func (h *host) everything(s *mcpServer) error {
	ctx, cancel := mcpCtx()
	defer cancel()
	if _, err := s.initialize(ctx); err != nil {
		return err
	}
	names, err := s.listTools(ctx)
	if err != nil {
		return err
	}
	h.out.printf("  tools/list: %d tools: %s\n", len(names), strings.Join(names, ", "))
	for _, want := range []string{"echo", "get-sum", "trigger-long-running-operation", "trigger-sampling-request", "get-roots-list", "trigger-elicitation-request", "toggle-simulated-logging"} {
		if !slices.Contains(names, want) {
			return fmt.Errorf("everything: tools/list lacks %s (the host declared roots, sampling and elicitation)", want)
		}
	}
	if err := s.peer.Call(ctx, "logging/setLevel", map[string]string{"level": "debug"}, nil); err != nil {
		return fmt.Errorf("everything: logging/setLevel: %w", err)
	}

	for _, c := range []struct {
		tool, desc string
		args       any
	}{
		{"echo", "", map[string]any{"message": "hello from the Go host"}},
		{"get-sum", "", map[string]any{"a": 2, "b": 40}},
		{"trigger-sampling-request", ": the server asks the host's model while the host's call runs",
			map[string]any{"prompt": "Name three colours of the sea", "maxTokens": 50}},
		{"get-roots-list", ": the roots the host listed", map[string]any{}},
		{"trigger-elicitation-request", ": the server asks the host's user", map[string]any{}},
		{"toggle-simulated-logging", ": the server starts sending log messages", map[string]any{}},
	} {
		res, _, err := s.callTool(ctx, c.tool, c.args, nil)
		if err != nil || res.IsError {
			return fmt.Errorf("everything: %s: %+v, %w", c.tool, res, err)
		}
		h.out.printf("  tools/call %s%s:\n%s\n", c.tool, c.desc, indent(res.text(), "      "))
	}

	// Progress: 3 steps over 1.5 s, each a notification for our token.
	res, progress, err := s.callTool(ctx, "trigger-long-running-operation", map[string]any{"duration": 1.5, "steps": 3}, nil)
	if err != nil {
		return fmt.Errorf("everything: trigger-long-running-operation: %w", err)
	}
	if len(progress) != 3 { // all three have been seen when the Call returns
		return fmt.Errorf("everything: trigger-long-running-operation: %d progress notifications before the result, want 3", len(progress))
	}
	h.out.printf("  tools/call trigger-long-running-operation: %s (%d progress notifications)\n", res.text(), len(progress))

	// Cancellation: the user stops a 30 s operation at its first progress.
	h.out.printf("  tools/call trigger-long-running-operation for 30s, cancelled at its first progress:\n")
	if err := h.cancelLongRun(s); err != nil {
		return err
	}
	var pong struct{}
	if err := s.peer.Call(ctx, "ping", nil, &pong); err != nil {
		return fmt.Errorf("everything: ping after the cancellation: %w", err)
	}
	h.out.printf("  ping after the cancellation: the server answers\n")
	// Stop the simulated logging, so that nothing more arrives while the
	// session ends (the server does not exit when its stdin closes: Close
	// ends it after the grace period).
	if _, _, err := s.callTool(ctx, "toggle-simulated-logging", map[string]any{}, nil); err != nil {
		return fmt.Errorf("everything: toggle-simulated-logging: %w", err)
	}
	h.out.printf("  log messages received: %d\n", len(s.logLines()))
	return nil
}

// cancelLongRun starts a long operation and ends its ctx once the first
// progress arrives: MCPCancel sends notifications/cancelled for it.
func (h *host) cancelLongRun(s *mcpServer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := time.AfterFunc(mcpCallTimeout, cancel)
	defer timer.Stop()
	var once sync.Once
	first := make(chan struct{})
	stop := func(mcpProgress) { once.Do(func() { close(first); cancel() }) }
	start := time.Now()
	_, progress, err := s.callTool(ctx, "trigger-long-running-operation", map[string]any{"duration": 30, "steps": 30}, stop)
	select {
	case <-first:
	default:
		return fmt.Errorf("everything: the 30 s operation ended before any progress: %v", err)
	}
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("everything: the cancelled call returned %v, want context.Canceled", err)
	}
	h.out.printf("    cancelled after %d progress notification(s): the call returned %q after %v; notifications/cancelled sent\n",
		len(progress), err, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// filesystem drives server-filesystem on dir.
func (h *host) filesystem(s *mcpServer, dir string) error {
	ctx, cancel := mcpCtx()
	defer cancel()
	if _, err := s.initialize(ctx); err != nil {
		return err
	}
	names, err := s.listTools(ctx)
	if err != nil {
		return err
	}
	h.out.printf("  tools/list: %d tools: %s\n", len(names), strings.Join(names, ", "))
	for _, c := range []struct {
		tool    string
		args    map[string]any
		isError bool
	}{
		{"list_directory", map[string]any{"path": dir}, false},
		{"read_text_file", map[string]any{"path": filepath.Join(dir, "notes.txt")}, false},
		{"read_text_file", map[string]any{"path": filepath.Join(dir, "todo.md"), "head": 1}, false},
		{"read_text_file", map[string]any{"path": "/etc/passwd"}, true},
	} {
		res, _, err := s.callTool(ctx, c.tool, c.args, nil)
		if err != nil || res.IsError != c.isError {
			return fmt.Errorf("filesystem: %s %v: %+v, %v (want isError %v)", c.tool, c.args["path"], res, err, c.isError)
		}
		what := "result"
		if res.IsError {
			what = "refused (isError)"
		}
		h.out.printf("  tools/call %s %s: %s:\n%s\n", c.tool, c.args["path"], what, indent(res.text(), "      "))
	}
	return nil
}

// crashingMCP starts server-filesystem on a directory that does not
// exist: it exits with status 1 before answering, and the host says so.
func (h *host) crashingMCP(node, modules string, roots []mcpRoot) error {
	s, err := h.startMCP("filesystem-bad", roots, node, filepath.Join(modules, filesystemScript), "/nonexistent/agent-mcp-dir")
	if err != nil {
		return err
	}
	defer s.close()
	ctx, cancel := mcpCtx()
	defer cancel()
	_, err = s.initialize(ctx)
	exit, ok := crashed(err)
	if !ok {
		return fmt.Errorf("filesystem-bad: initialize = %v, want the crash of the server", err)
	}
	h.out.printf("  filesystem-bad crashed: %v (exit status %d)\n", err, exit.ExitCode())
	return nil
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
