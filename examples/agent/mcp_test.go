package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc/internal/testbin"
)

// mcpModules returns the node_modules directory holding the reference MCP
// servers (MCP_NODE_MODULES, or .ci/mcp's, which `npm ci` there fills),
// skipping the test when they or Node are missing, unless REQUIRE_MCP=1
// (CI sets it) makes that a failure.
func mcpModules(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MCP_NODE_MODULES")
	if dir == "" {
		dir = filepath.Join("..", "..", ".ci", "mcp", "node_modules")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(abs, everythingScript)); err != nil {
		missing = "the MCP servers are not installed (cd .ci/mcp && npm ci)"
	}
	if missing != "" {
		if os.Getenv("REQUIRE_MCP") == "1" {
			t.Fatalf("REQUIRE_MCP=1 but %s", missing)
		}
		t.Skipf("skipping the MCP session: %s; set REQUIRE_MCP=1 to make this a failure", missing)
	}
	return abs
}

// TestMCPSession runs the host against server-everything and
// server-filesystem and checks what each did, with the values the servers
// computed from what the host sent and answered.
func TestMCPSession(t *testing.T) {
	modules := mcpModules(t)
	ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "-mcp", modules)
	cmd.Env = childEnv()
	cmd.WaitDelay = waitDelay
	var stdout, stderr testbin.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String()
	if ctx.Err() != nil || err != nil {
		t.Fatalf("agent -mcp: %v (want exit status 0)\ntranscript:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	defer func() {
		if t.Failed() {
			t.Logf("transcript:\n%s\nstderr:\n%s", out, stderr.String())
		}
	}()
	dir := regexp.MustCompile(`answered file://(/\S+)`).FindStringSubmatch(out)
	if dir == nil {
		t.Fatal("no roots/list answered in the transcript")
	}
	root := dir[1]

	// everything's session is the same over stdio and over Streamable
	// HTTP.
	everything := func(name string) []string {
		return []string{
			"  " + name + ": initialized, mcp-servers/everything ",
			", protocol 2025-06-18\n",
			"  tools/call echo:\n      Echo: hello from the Go host\n",
			"  tools/call get-sum:\n      The sum of 2 and 40 is 42.\n",
			// sampling: the server's request, answered by the stub model,
			// whose text comes back in the tool's result
			`    <- ` + name + ` calls sampling/createMessage (1 message(s), maxTokens 50): the stub model answers "stub model: 9 words received"`,
			"  tools/call trigger-sampling-request: ",
			`"model": "stub-model-1",`,
			`"text": "stub model: 9 words received"`,
			// roots
			"  tools/call get-roots-list: the roots the host listed:\n      Current MCP Roots (1 total):",
			"1. agent workspace\n         URI: file://" + root + "\n",
			// elicitation
			`    <- ` + name + ` calls elicitation/create "Please provide inputs for the following fields:" (13 fields, required [name]): the stub user accepts with map[check:true name:Ada Lovelace]`,
			"      - Name: Ada Lovelace\n      - Agreed to terms: true\n",
			// progress, in order, then the result
			// (the tokens are the Peer's own: jsonrpc.MCPProgress makes them)
			"    <- " + name + " progress \"",
			"\": 1/3 \n",
			"\": 2/3 \n",
			"\": 3/3 \n",
			"  tools/call trigger-long-running-operation: Long running operation completed. Duration: 1.5 seconds, Steps: 3. (3 progress notifications)\n",
			// cancellation
			"\": 1/30 \n",
			`    cancelled after 1 progress notification(s): the call returned "context canceled" after `,
			"  ping after the cancellation: the server answers\n",
		}
	}
	inOrder := everything("everything")
	inOrder = append(inOrder, "  started MCP server everything-http (pid ", " over Streamable HTTP at http://127.0.0.1:")
	inOrder = append(inOrder, everything("everything-http")...)
	inOrder = append(inOrder,
		// filesystem
		"  filesystem: initialized, secure-filesystem-server ",
		"  tools/call list_directory "+root+": result:\n      [FILE] notes.txt\n      [FILE] todo.md\n",
		"  tools/call read_text_file "+root+"/notes.txt: result:\n      Buy milk.\n      Call the plumber about the leak.\n      Ship the release.\n",
		"  tools/call read_text_file "+root+"/todo.md: result:\n      - write the MCP example\n",
		"  tools/call read_text_file /etc/passwd: refused (isError):\n      Access denied - path outside allowed directories: /etc/passwd not in "+root+"\n",
		// the crash
		"  filesystem-bad crashed: filesystem-bad: initialize: jsonrpc: connection closed: stdio: child process ended: exit status 1 (exit status 1)\n",
		// shutdown
		"  everything exited with status ",
		"  everything-http exited with status 0\n",
		"  filesystem exited with status 0\n",
		"agent host: MCP session done, no server left running\n",
	)
	rest := out
	for _, want := range inOrder {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("transcript lacks %q after what came before", want)
		}
		rest = rest[i+len(want):]
	}
	// Each server asked for the roots, and got the host's directory.
	for _, name := range []string{"everything", "everything-http", "filesystem"} {
		if !strings.Contains(out, "    <- "+name+" calls roots/list: answered file://"+root+"\n") {
			t.Errorf("%s did not ask for the roots", name)
		}
	}
	for _, name := range []string{"everything", "everything-http"} {
		// Log messages: the one about the roots, and the simulated ones.
		if !strings.Contains(out, "    <- "+name+" log [info] Roots updated: 1 root(s) received from client\n") {
			t.Errorf("%s: no log message about the roots", name)
		}
		if !regexp.MustCompile(`(?m)^    <- ` + name + ` log \[\w+\] \w+[- ]level[- ]message( - SessionId \S+)?$`).MatchString(out) {
			t.Errorf("%s: no simulated log message", name)
		}
		// No progress for the cancelled call was taken after it ended.
		cancelled := regexp.MustCompile(`<- ` + name + ` progress ("[^"]+"): 1/30 `).FindStringSubmatch(out)
		if cancelled == nil {
			t.Fatalf("%s: no progress line for the cancelled call", name)
		}
		if n := strings.Count(out, "<- "+name+" progress "+cancelled[1]+":"); n != 1 {
			t.Errorf("%s: %d progress lines for the cancelled call, want 1 (the rest ignored)", name, n)
		}
	}
	for _, m := range regexp.MustCompile(`log messages received: (\d+)`).FindAllStringSubmatch(out, -1) {
		if n, _ := strconv.Atoi(m[1]); n < 2 {
			t.Errorf("log messages received: %d, want at least 2", n)
		}
	}
	if n := strings.Count(out, "log messages received: "); n != 2 {
		t.Errorf("%d counts of log messages, want 2 (stdio and HTTP)", n)
	}
	// Every server is gone.
	for _, m := range regexp.MustCompile(`started MCP server (\S+) \(pid (\d+)\)`).FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[2])
		if alive(pid) {
			t.Errorf("MCP server %s (pid %d) outlived the host", m[1], pid)
		}
	}
}
