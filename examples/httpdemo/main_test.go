package main

import (
	"bufio"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readmeCommands returns the "$ curl ..." lines of httprpc/README.md's
// console blocks, each with the output the README shows under it.
func readmeCommands(t *testing.T) (cmds, outs []string) {
	f, err := os.Open("../../httprpc/README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "```console":
			in = true
		case in && line == "```":
			in = false
		case in && strings.HasPrefix(line, "$ "):
			cmds = append(cmds, strings.TrimPrefix(line, "$ "))
			outs = append(outs, "")
		case in && len(cmds) > 0:
			outs[len(outs)-1] += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds, outs
}

// TestCurl runs the curl commands of httprpc/README.md, with their
// address replaced by a loopback test server's, against httpdemo's
// handler, and holds each to the output the README shows.
func TestCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("TestCurl runs httprpc/README.md's curl commands and needs curl: %v (apt-get install curl)", err)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatalf("TestCurl needs sh: %v", err)
	}
	h, sessions := newHandler(log.New(io.Discard, "", 0))
	hs := httptest.NewServer(h)
	defer hs.Close()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sessions.Shutdown(ctx); err != nil {
			t.Errorf("sessions.Shutdown: %v", err)
		}
	}()
	dir := t.TempDir() // where the commands keep the session's headers
	cmds, outs := readmeCommands(t)
	if len(cmds) < 9 {
		t.Fatalf("found %d curl commands in the README, want at least 9", len(cmds))
	}
	for i, cmd := range cmds {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		run := strings.ReplaceAll(cmd, "http://127.0.0.1:8080", hs.URL)
		c := exec.CommandContext(ctx, "sh", "-c", run)
		c.Dir = dir
		out, err := c.Output()
		cancel()
		if err != nil {
			t.Errorf("%s: %v", cmd, err)
			continue
		}
		got := strings.TrimSuffix(string(out), "\n") + "\n"
		if got != outs[i] {
			t.Errorf("%s\ngot:  %s\nwant: %s", cmd, got, outs[i])
		}
	}
}
