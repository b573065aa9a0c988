package main

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
	"github.com/peerwire/jsonrpc/internal/testbin"
)

// readOverHTTP starts a session with mcptool -http whose client lists
// roots, and returns what read_file gives for path.
func readOverHTTP(t *testing.T, endpoint string, roots []string, path string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h := jsonrpc.NewMux()
	h.HandleFunc("roots/list", func(context.Context, *jsonrpc.Request) (any, error) {
		var rs []root
		for _, r := range roots {
			rs = append(rs, root{URI: r, Name: "a root"})
		}
		return rootsListResult{Roots: rs}, nil
	})
	p, err := httprpc.Dial(ctx, endpoint, httprpc.DialOptions{ProtocolVersion: supportedVersions[0], Peer: jsonrpc.Options{Handler: h}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close(); p.Wait() }()
	var res initializeResult
	if err := p.Call(ctx, "initialize", map[string]any{"protocolVersion": supportedVersions[0], "capabilities": map[string]any{"roots": map[string]any{}},
		"clientInfo": implementation{Name: "anyone", Version: "1"}}, &res); err != nil {
		t.Fatal(err)
	}
	if err := p.Notify(ctx, "notifications/initialized", nil); err != nil {
		t.Fatal(err)
	}
	var out callToolResult
	if err := p.Call(ctx, "tools/call", map[string]any{"name": "read_file", "arguments": map[string]any{"path": path}}, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Content) == 0 {
		return "", out.IsError
	}
	return out.Content[0].Text, out.IsError
}

// TestHTTPRootBoundsClientRoots pins the review's finding 1: over HTTP the
// client is whoever reaches the port, and it chose the directory mcptool
// served: one that declared roots and listed file:/// read the file next
// to -root that the tests call secret ("not for tools"). Now -root bounds
// every root a client lists: one outside it is refused (and -root serves
// instead), one inside it is honoured, and a symbolic link inside -root
// that leads out of it is refused too.
func TestHTTPRootBoundsClientRoots(t *testing.T) {
	dir := makeRoot(t)
	secret := filepath.Join(filepath.Dir(dir), "secret.txt")
	if err := os.Symlink(filepath.Dir(dir), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	endpoint := startHTTP(t, dir)
	fileURI := func(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

	text, isErr := readOverHTTP(t, endpoint, []string{"file:///"}, strings.TrimPrefix(secret, "/"))
	t.Logf("-root %s; read_file %s through a client's root file:///: %q isError=%v", dir, secret, text, isErr)
	if strings.Contains(text, "not for tools") || !isErr {
		t.Errorf("a client listing file:/// read %s, outside -root %s: %q", secret, dir, text)
	}
	if text, isErr := readOverHTTP(t, endpoint, []string{"file:///"}, "notes.txt"); isErr || !strings.Contains(text, "Buy milk") {
		t.Errorf("with its root refused, -root serves: notes.txt gave %q (isError %v)", text, isErr)
	}
	if text, isErr := readOverHTTP(t, endpoint, []string{fileURI(filepath.Join(dir, "docs"))}, "guide.md"); isErr || !strings.Contains(text, "Start with go run") {
		t.Errorf("a root inside -root: guide.md gave %q (isError %v)", text, isErr)
	}
	if text, isErr := readOverHTTP(t, endpoint, []string{fileURI(filepath.Join(dir, "out"))}, "secret.txt"); !isErr || strings.Contains(text, "not for tools") {
		t.Errorf("a root through a symbolic link out of -root read %q (isError %v)", text, isErr)
	}
}

// TestHTTPNeedsRoot pins that mcptool -http without -root refuses to start:
// over HTTP -root is the bound of what any client may read.
func TestHTTPNeedsRoot(t *testing.T) {
	cmd := exec.Command(binPath, "-http", "127.0.0.1:0")
	cmd.Env = testbin.Env()
	done := make(chan struct{})
	timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill(); close(done) })
	outb, err := cmd.CombinedOutput()
	if !timer.Stop() {
		<-done
	}
	out := string(outb)
	if err == nil || !strings.Contains(out, "-http needs -root") {
		t.Fatalf("mcptool -http without -root: %v\n%s", err, out)
	}
}
