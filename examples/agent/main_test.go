package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc/internal/testbin"
)

const (
	hostTimeout = 60 * time.Second // bounds a whole run of the host
	waitDelay   = 5 * time.Second  // how long Wait may wait for output pipes
)

// binPath is the agent binary that TestMain builds.
var binPath string

func TestMain(m *testing.M) { testbin.Main(m, "agent", &binPath) }

// childEnv returns the environment for a child the test starts: no token
// unless given in extra, and, for a race-enabled binary, no 1 s sleep at
// exit (the tools the host starts inherit it).
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, tokenEnv+"=") {
			env = append(env, kv)
		}
	}
	if testbin.Race && os.Getenv("GORACE") == "" {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return append(env, extra...)
}

// runHost runs the agent as the host and returns its transcript, its
// stderr and how it ended.
func runHostProcess(t *testing.T) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath)
	cmd.Env = childEnv()
	cmd.WaitDelay = waitDelay
	var out, errOut testbin.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the host did not finish within %v:\n%s\nstderr:\n%s", hostTimeout, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), err
}

// TestHostTranscript runs the whole session and checks what its transcript
// says happened, in order.
func TestHostTranscript(t *testing.T) {
	out, stderr, err := runHostProcess(t)
	if err != nil {
		t.Fatalf("host: %v (want exit status 0)\ntranscript:\n%s\nstderr:\n%s", err, out, stderr)
	}
	if strings.Contains(stderr, "DATA RACE") {
		t.Errorf("the race detector fired:\n%s", stderr)
	}
	defer func() {
		if t.Failed() {
			t.Logf("transcript:\n%s\nstderr:\n%s", out, stderr)
		}
	}()

	// Each line must appear after the one before.
	inOrder := []string{
		// tools/list on each tool
		"  started tool files (pid ",
		"  started tool flaky (pid ",
		"  files  files.read ",
		"  files  files.delete ",
		"  flaky  flaky.echo ",
		"  flaky  flaky.crash ",
		// a read, with the tool's callback to the host on the same pipe
		"    <- files calls host.readFile /home/user/notes.txt: 69 bytes sent",
		"  files.read /home/user/notes.txt: 3 lines, 12 words, 69 bytes",
		// deletions, confirmed by the host's policy or not
		`    <- files calls host.confirm "Delete /home/user/todo.md?": yes`,
		"    <- files calls host.deleteFile /home/user/todo.md: removed from the sandbox",
		"  files.delete /home/user/todo.md: deleted",
		`    <- files calls host.confirm "Delete /etc/hosts?": no (policy: nothing under /etc may be deleted)`,
		"  files.delete /etc/hosts: refused: jsonrpc: files.delete: code -32012: the host declined the deletion",
		"  the sandbox now holds /etc/hosts, /home/user/notes.txt",
		// the call without the token
		"  files.read without the token: refused by files: jsonrpc: files.read: code -32010: unauthorized",
		`  files.peek: the tool called host.readFile without the token: refused by the host (code -32010, "unauthorized: missing or wrong token")`,
		// the batch
		"  batch[0] files.read /home/user/notes.txt: 3 lines, 12 words, 69 bytes",
		"  batch[1] files.read /etc/hosts: 2 lines, 4 words, 34 bytes",
		"  batch[2] files.read /home/user/../../root/.ssh/id_rsa: refused: jsonrpc: files.read: code -32011: path is outside the sandbox",
		// the crash
		`  flaky.echo: "hello, flaky"`,
		"  flaky.crash: the call failed: tool flaky crashed during flaky.crash: jsonrpc: connection closed: stdio: child process ended: exit status 3 (errors.Is ErrClosed: true; the cause is the crash: true)",
		// the supervisor restarted it (its own lines are checked below:
		// they interleave with the host's)
		"  started tool flaky (pid ",
		`  flaky.echo after the restart: "still there?" (restarts: 1)`,
		"== flaky crashes twice more: the supervisor gives up",
		"  flaky.echo: fails at once: flaky.echo: tool given up on: flaky crashed 3 times within 10s (last: exit status 3); not restarting it",
		// files unaffected
		"== files after the crash: still answering",
		"    <- files calls host.readFile /home/user/notes.txt: 69 bytes sent",
		"  files.read /home/user/notes.txt: 3 lines, 12 words, 69 bytes",
		// shutdown
		"  files exited with status 0\n",
		"  flaky had already exited, with status 3",
		"agent host: done, no tool left running",
	}
	for _, want := range []string{
		"  [supervisor] flaky exited with status 3: restarting it in 50ms\n",
		"  [supervisor] flaky exited with status 3: restarting it in 100ms\n",
		"  [supervisor] tool given up on: flaky crashed 3 times within 10s (last: exit status 3); not restarting it\n",
	} {
		if strings.Count(out, want) != 1 {
			t.Errorf("transcript has %q %d times, want once", want, strings.Count(out, want))
		}
	}
	rest := out
	for _, want := range inOrder {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("transcript lacks %q after what came before", want)
		}
		rest = rest[i+len(want):]
	}

	// The token-less call was refused before the handler ran: no callback
	// to the host between it and the batch.
	section := between(t, out, "== A call without the token", "== A batch")
	if strings.Contains(section, "<- files calls") {
		t.Errorf("the token-less call reached the handler:\n%s", section)
	}

	// The batch's three elements each called back the host, in any order.
	section = between(t, out, "== A batch", "== flaky")
	for _, want := range []string{
		"<- files calls host.readFile /home/user/notes.txt: 69 bytes sent",
		"<- files calls host.readFile /etc/hosts: 34 bytes sent",
		"<- files calls host.readFile /home/user/../../root/.ssh/id_rsa: refused, outside the sandbox",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the batch section lacks %q", want)
		}
	}

	// The logging interceptor saw every outbound call, failed ones too.
	for _, re := range []string{
		`(?m)^    log: level=INFO msg=call tool=files method=tools/list id=\d+ elapsed=\S+$`,
		`(?m)^    log: level=INFO msg=call tool=files method=files.read id=\d+ elapsed=\S+$`,
		`(?m)^    log: level=WARN msg="call failed" tool=files method=files.read id=\d+ elapsed=\S+ err=".*code -32010: unauthorized`,
		`(?m)^    log: level=WARN msg="call failed" tool=flaky method=flaky.crash id=\d+ elapsed=\S+ err="jsonrpc: connection closed: stdio: child process ended: exit status 3"$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no log line matching %s", re)
		}
	}
	if n := strings.Count(between(t, out, "== A batch", "== flaky"), "method=files.read"); n != 3 {
		t.Errorf("the batch logged %d calls, want 3", n)
	}

	// Both tools are gone: the host reaped them before exiting.
	for _, m := range regexp.MustCompile(`started tool (\w+) \(pid (\d+)\)`).FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[2])
		if alive(pid) {
			t.Errorf("tool %s (pid %d) outlived the host", m[1], pid)
		}
	}
}

// between returns the part of s from the first from to the next to.
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("no %q in the transcript", from)
	}
	s = s[i:]
	j := strings.Index(s, to)
	if j < 0 {
		t.Fatalf("no %q after %q in the transcript", to, from)
	}
	return s[:j]
}

// alive reports whether a process with the pid exists.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	defer p.Release()
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// TestUsage checks that the tool role refuses to run without a token or
// for an unknown tool, and that stray arguments are refused: exit status 2.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{"no token", []string{"-tool", "files"}, nil},
		{"unknown tool", []string{"-tool", "nope"}, []string{tokenEnv + "=x"}},
		{"stray argument", []string{"extra"}, nil},
		{"-tool and -mcp", []string{"-tool", "files", "-mcp", "."}, []string{tokenEnv + "=x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binPath, tc.args...)
			cmd.Env = childEnv(tc.env...)
			cmd.WaitDelay = waitDelay
			var stdout, stderr testbin.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != 2 {
				t.Errorf("exit status %d (%v), want 2; stderr:\n%s", code, err, stderr.String())
			}
			if stdout.String() != "" {
				t.Errorf("wrote to stdout: %q", stdout.String())
			}
		})
	}
}
