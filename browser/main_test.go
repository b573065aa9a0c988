//go:build unix

package browser_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// need skips the test, or fails it when REQUIRE_BROWSER=1 (as .ci/run
// sets), because a tool is missing.
func need(t *testing.T, missing string) {
	t.Helper()
	const hint = "install node 20 and chromium, and run npm ci in browser/test"
	if os.Getenv("REQUIRE_BROWSER") == "1" {
		t.Fatalf("%s, and REQUIRE_BROWSER=1; %s", missing, hint)
	}
	t.Skipf("%s; %s (REQUIRE_BROWSER=1 makes this a failure)", missing, hint)
}

// runNode runs node with args in dir test/, with env added, bounded by
// timeout; it kills node's whole process group (a Chromium too) if it
// overruns.
func runNode(t *testing.T, timeout time.Duration, env []string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		need(t, "node is not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir, _ = filepath.Abs("test")
	cmd.Env = append(os.Environ(), env...)
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

// TestNode runs the client's tests with node's own test runner against a
// real Go server (testServer): test/client.test.mjs over WebSocket (calls,
// errors, timeouts, AbortSignal and the cancel reaching the handler's
// ctx, reconnection, calls from the server, subscriptions with recovery,
// presence),
// and against a fake socket (test/fakews.mjs): test/unit.test.mjs (exact
// ids; a packed batch of notifications handled in order, nothing sent
// back), test/replies.test.mjs (malformed replies, the other side's
// cancels of big and odd ids), test/reconnect.test.mjs (backoff across
// connections that die at once, heartbeat and the offline event, calls
// given up while disconnected) and test/topics.test.mjs (no subscribe
// loop after a restart, timeouts that settle or back off, one
// subscription per topic, a subscribe after an unsubscribe's reply,
// paged catch-ups, history on the first subscription, a kick that ends a
// subscription, presence events and presence()), test/lifecycle.test.mjs
// (calls before start, start after close) and test/heartbeat.test.mjs
// (the heartbeat on by default, on node's mock clock; prepare bounded);
// and test/liveness.test.mjs against the server again (a server pushing
// back is not taken for dead; the page's own close 4001 is a clean end
// for it); and test/tracing.test.mjs (the tracing hook: off, not a byte
// of difference on the wire; on, through README's adapter on the
// OpenTelemetry SDK, traceparent in params._meta and the spans).
func TestNode(t *testing.T) {
	s := startTestServer(t)
	runNode(t, 120*time.Second, []string{"JSONRPC_BASE=" + s.hs.URL},
		"--experimental-websocket", "--test", "--test-reporter=spec", "--test-timeout=60000",
		"client.test.mjs", "unit.test.mjs", "replies.test.mjs", "reconnect.test.mjs", "topics.test.mjs",
		"lifecycle.test.mjs", "heartbeat.test.mjs", "liveness.test.mjs", "tracing.test.mjs")
}

// TestChromium runs test/chromium.mjs: the package in headless Chromium,
// served by Handler, with a page taken offline through the DevTools
// protocol and back, recovering what was published meanwhile.
func TestChromium(t *testing.T) {
	chromium := os.Getenv("CHROMIUM_PATH")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		need(t, "no Chromium at "+chromium)
	}
	if _, err := os.Stat(filepath.Join("test", "node_modules", "playwright-core", "package.json")); err != nil {
		need(t, "browser/test/node_modules/playwright-core is not installed")
	}
	s := startTestServer(t)
	runNode(t, 90*time.Second, []string{"CHROMIUM_PATH=" + chromium}, "chromium.mjs", s.hs.URL)
}

// TestTypes compiles test/types.test.ts, the uses the README shows, with
// tsc --strict against jsonrpc.d.ts: the declarations exist, and say what
// jsonrpc.js takes and gives.
func TestTypes(t *testing.T) {
	if _, err := os.Stat(filepath.Join("test", "node_modules", "typescript", "package.json")); err != nil {
		need(t, "browser/test/node_modules/typescript is not installed")
	}
	runNode(t, 120*time.Second, nil, filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", ".")
}
