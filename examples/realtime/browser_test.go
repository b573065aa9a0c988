//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

const installHint = "apt-get install -y chromium && (cd examples/realtime/e2e && npm ci)"

// needTool skips the test, or fails it when REQUIRE_BROWSER=1 (as CI sets),
// because something the browser tests need is missing.
func needTool(t *testing.T, missing string) {
	t.Helper()
	if os.Getenv("REQUIRE_BROWSER") == "1" {
		t.Fatalf("%s, and REQUIRE_BROWSER=1; install with: %s", missing, installHint)
	}
	t.Skipf("%s; install with: %s (or set REQUIRE_BROWSER=1 to make this a failure)", missing, installHint)
}

// runNode runs node with args in dir, bounded by timeout, and kills its
// whole process group (node and the Chromium it started) if it overruns.
func runNode(t *testing.T, dir string, timeout time.Duration, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("node %v:\n%s", args, out.Bytes())
	if ctx.Err() != nil {
		t.Fatalf("node %v: killed after %v", args, timeout)
	}
	if err != nil {
		t.Fatalf("node %v: %v", args, err)
	}
}

// TestBrowser opens two headless Chromium pages on one board and checks
// what each shows: see e2e/browser.mjs. SCREENSHOT=/tmp/x.png keeps a
// picture of both pages.
func TestBrowser(t *testing.T) {
	chromium := os.Getenv("CHROMIUM_PATH")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		needTool(t, "no Chromium at "+chromium+" (set CHROMIUM_PATH to use another)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		needTool(t, "node is not installed")
	}
	e2e, _ := filepath.Abs("e2e")
	if _, err := os.Stat(filepath.Join(e2e, "node_modules", "playwright-core", "package.json")); err != nil {
		needTool(t, "e2e/node_modules/playwright-core is not installed")
	}
	url := startServer(t)
	t.Setenv("CHROMIUM_PATH", chromium)
	runNode(t, e2e, 90*time.Second, "browser.mjs", url)
}

// TestRPCJS runs the unit tests of static/rpc.js in node against a fake
// socket: no browser or npm package needed.
func TestRPCJS(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		needTool(t, "node is not installed")
	}
	runNode(t, "e2e", 60*time.Second, "--test", "rpc.test.mjs")
}
