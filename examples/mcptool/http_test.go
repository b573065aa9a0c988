package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
	"github.com/peerwire/jsonrpc/internal/testbin"
)

// startHTTP starts mcptool -http on a loopback port with -root dir (and
// args) and returns its endpoint; the process is stopped with SIGTERM at the end of
// the test, and must exit 0.
func startHTTP(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"-http", "127.0.0.1:0", "-root", dir}, args...)...)
	cmd.Env = testbin.Env()
	var stderr testbin.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("mcptool -http after SIGINT: %v (want exit status 0)\nstderr:\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("mcptool -http did not exit within 10 s of SIGINT\nstderr:\n%s", stderr.String())
		}
	})
	addr := regexp.MustCompile(`serving MCP at (http://127\.0\.0\.1:\d+/mcp)`)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("mcptool -http printed no address within 10 s:\n%s", stderr.String())
	return ""
}

// TestHTTPSessionsHaveTheirOwnServer pins that over Streamable HTTP each
// session is a client of its own: one that has initialized may use the
// tools, another that has not is refused as over a fresh stdio process.
func TestHTTPSessionsHaveTheirOwnServer(t *testing.T) {
	endpoint := startHTTP(t, makeRoot(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func() *jsonrpc.Peer {
		p, err := httprpc.Dial(ctx, endpoint, httprpc.DialOptions{ProtocolVersion: supportedVersions[0]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(); p.Wait() })
		return p
	}
	a := dial()
	var res initializeResult
	if err := a.Call(ctx, "initialize", initializeParams{ProtocolVersion: supportedVersions[0], ClientInfo: implementation{Name: "a", Version: "1"}}, &res); err != nil {
		t.Fatal(err)
	}
	if err := a.Notify(ctx, "notifications/initialized", nil); err != nil {
		t.Fatal(err)
	}
	var out callToolResult
	if err := a.Call(ctx, "tools/call", map[string]any{"name": "list_files", "arguments": map[string]any{}}, &out); err != nil || out.IsError {
		t.Fatalf("list_files in the initialized session: %+v, %v", out, err)
	}
	// A session starts with initialize only: a client that begins with
	// tools/list starts none (400), and its Peer ends saying so.
	b := dial()
	err := b.Call(ctx, "tools/list", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request") {
		t.Errorf("tools/list without a session = %v, want the POST's 400", err)
	}
}

// TestHTTPAllowedHosts pins the review's finding 2 for mcptool: it had no
// way to answer to a name (a server listening on all interfaces must list
// the names it is reached by, or refuse them against DNS rebinding). With
// -allowed-hosts it answers to the names listed, and still refuses others.
func TestHTTPAllowedHosts(t *testing.T) {
	dir := makeRoot(t)
	for _, tc := range []struct {
		args []string
		host string
		want int
	}{
		{nil, "notes.example.test", 403},
		{[]string{"-allowed-hosts", "notes.example.test,*.lan"}, "notes.example.test", 200},
		{[]string{"-allowed-hosts", "notes.example.test,*.lan"}, "box.lan:8931", 200},
		{[]string{"-allowed-hosts", "notes.example.test"}, "rebind.attacker.example", 403},
	} {
		endpoint := startHTTP(t, dir, tc.args...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Host = tc.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != tc.want {
			t.Errorf("mcptool %v, Host %s: %s, want %d", tc.args, tc.host, resp.Status, tc.want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}
