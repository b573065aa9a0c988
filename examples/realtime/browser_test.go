//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc/internal/testbin"
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

// browserTools returns the Chromium to use and the e2e directory, or skips
// (fails, with REQUIRE_BROWSER=1) when something is missing.
func browserTools(t *testing.T) (chromium, e2e string) {
	t.Helper()
	chromium = os.Getenv("CHROMIUM_PATH")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		needTool(t, "no Chromium at "+chromium+" (set CHROMIUM_PATH to use another)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		needTool(t, "node is not installed")
	}
	e2e, _ = filepath.Abs("e2e")
	if _, err := os.Stat(filepath.Join(e2e, "node_modules", "playwright-core", "package.json")); err != nil {
		needTool(t, "e2e/node_modules/playwright-core is not installed")
	}
	return chromium, e2e
}

// TestBrowser opens two headless Chromium pages on one board and checks
// what each shows: see e2e/browser.mjs. SCREENSHOT=/tmp/x.png keeps a
// picture of both pages.
func TestBrowser(t *testing.T) {
	chromium, e2e := browserTools(t)
	url := startServer(t)
	t.Setenv("CHROMIUM_PATH", chromium)
	runNode(t, e2e, 90*time.Second, "browser.mjs", url)
}

// TestBrowserCluster runs two processes of the demo on one NATS, opens a
// headless Chromium page on each (they see each other's notes and likes
// live, and count both pages), then starts a third node and checks that a
// page there shows the whole board: browser.mjs --nodes, then --late.
func TestBrowserCluster(t *testing.T) {
	chromium, e2e := browserTools(t)
	bin := buildDemo(t)
	natsURL, nodes := startCluster(t, bin, 2)
	t.Setenv("CHROMIUM_PATH", chromium)
	runNode(t, e2e, 90*time.Second, "browser.mjs", "--nodes", nodes[0].url, nodes[1].url)
	late := startNode(t, bin, "n3-late", "-nats", natsURL)
	runNode(t, e2e, 90*time.Second, "browser.mjs", "--late", late.url)
}

// TestBrowserOffline takes a headless Chromium page offline with the
// DevTools protocol while another page posts two notes and likes the
// first page's note; back online, the page shows exactly those, recovered
// from the topic's history, and fetches no board: see e2e/browser.mjs
// --offline.
func TestBrowserOffline(t *testing.T) {
	chromium, e2e := browserTools(t)
	url := startServer(t)
	t.Setenv("CHROMIUM_PATH", chromium)
	runNode(t, e2e, 90*time.Second, "browser.mjs", "--offline", url)
}

// TestBrowserReconnect restarts, under a headless Chromium page, the node
// it is connected to (on the same address, the board kept in NATS by
// another node): the page shows "reconnecting in N s…", then "connected",
// subscribes to the topic "board" again with its position and recovers
// from the topic's history (JetStream) what a page on the other node
// posted and liked while its node was down, nothing twice (no second
// batch: nothing to fetch again), and posts, without a reload.
// browser.mjs --restart prints RESTART-ME when the pages are ready; the
// test stops the node and says STOPPED on its stdin; browser.mjs prints
// START-ME once the other page has posted and liked and the page has
// tried its node and been refused, and the test starts the node again.
// The browser's console lines for those refused requests (its sign-in
// and its WebSocket, to the node that is down) are not page errors; any
// other is (issue 30, finding 21: a refused attempt read after the node
// was back failed .ci/run on a fresh clone).
func TestBrowserReconnect(t *testing.T) {
	chromium, e2e := browserTools(t)
	bin := buildDemo(t)
	natsURL, nodes := startCluster(t, bin, 1) // node 1 holds NATS and the board
	addr := freeAddr(t)
	n2 := startNode(t, bin, "n2", "-addr", addr, "-nats", natsURL)

	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "browser.mjs", "--restart", n2.url, nodes[0].url)
	cmd.Dir = e2e
	cmd.Env = append(os.Environ(), "CHROMIUM_PATH="+chromium)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr testbin.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(stdout)
	stopped, restarted := false, false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(&out, line)
		switch {
		case line == "RESTART-ME" && !stopped:
			stopped = true
			n2.stop(t, syscall.SIGTERM)
			fmt.Fprintln(stdin, "STOPPED") // the other page posts and likes meanwhile
		case line == "START-ME" && stopped && !restarted:
			restarted = true
			again := startNode(t, bin, "n2-again", "-addr", addr, "-nats", natsURL)
			if again.url != n2.url {
				t.Errorf("restarted node serves %s, want %s", again.url, n2.url)
			}
		}
	}
	err = cmd.Wait()
	t.Logf("node browser.mjs --restart:\n%s%s", out.Bytes(), stderr.String())
	if ctx.Err() != nil {
		t.Fatal("browser.mjs --restart: killed after 120s")
	}
	if err != nil || !restarted {
		t.Fatalf("browser.mjs --restart: %v (restarted: %v)", err, restarted)
	}
}
