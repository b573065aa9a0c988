//go:build unix

package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// launcher is a shell script that starts a long sleep as a grandchild of the
// test, as npx, uvx or a wrapper script starts the real server, tells its
// pid on stdout and waits for it. Neither reads stdin, so only a signal ends
// them; the sleep bounds their life should the test fail to.
const launcher = `sleep 60 & echo "{\"pid\":$!}"; wait`

// startShell runs script with sh as the child (Line framing), with attr as
// its SysProcAttr, and returns the Conn, the command, the name of the file
// that gets the script's stderr, and the pid of the grandchild the script
// reports first. The grandchild is killed when the test ends, whatever
// Close did.
//
// Stderr is a file, not a buffer: os/exec would copy a buffer's pipe, and
// cmd.Wait wait for every process holding it, so a grandchild that Close
// rightly leaves alone would hold Close too.
func startShell(t *testing.T, script string, attr *syscall.SysProcAttr) (*Conn, *exec.Cmd, string, int) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh:", err)
	}
	cmd := exec.Command(sh, "-c", script)
	cmd.SysProcAttr = attr
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close() // the child has its own copy
	cmd.Stderr = stderr
	c, err := Command(cmd, Options{Framing: Line, GracePeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	watchdog(t, c)
	msg, err := c.Read()
	var m struct{ Pid int }
	if err == nil {
		err = json.Unmarshal(msg, &m)
	}
	if err != nil || m.Pid <= 0 {
		t.Fatalf("reading the grandchild's pid: %q, %v", msg, err)
	}
	t.Cleanup(func() { syscall.Kill(m.Pid, syscall.SIGKILL) })
	return c, cmd, stderr.Name(), m.Pid
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) == syscall.ESRCH {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) && dirExists("/proc/self") {
		return false // gone since kill looked
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return err != nil || i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func dirExists(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.IsDir()
}

// gone reports whether process pid is gone within d, looking every 10 ms.
func gone(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// signalOf returns the signal that ended the process of err's
// *exec.ExitError, or 0.
func signalOf(err error) syscall.Signal {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return 0
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0
	}
	return ws.Signal()
}

// TestCommandCloseEndsGrandchildren is finding 9: Close killed only the
// direct child, so the process a launcher had started (the real server)
// kept running. The child and what it started form a process group, which
// Close asks to end with SIGTERM once the child ignores its stdin closing.
func TestCommandCloseEndsGrandchildren(t *testing.T) {
	c, cmd, _, grandchild := startShell(t, launcher, nil)
	if pgid, err := syscall.Getpgid(cmd.Process.Pid); err != nil || pgid != cmd.Process.Pid {
		t.Errorf("the child's process group = %d, %v; want one of its own, %d", pgid, err, cmd.Process.Pid)
	}
	var err error
	within(t, 10*time.Second, "Close", func() { err = c.Close() })
	if !gone(grandchild, 2*time.Second) {
		t.Errorf("the grandchild %d still runs after Close", grandchild)
	}
	if sig := signalOf(err); sig != syscall.SIGTERM || !strings.Contains(err.Error(), "SIGTERM") || strings.Contains(err.Error(), "killed") {
		t.Errorf("Close = %v (signal %v); want the child ended by SIGTERM, and said so", err, sig)
	}
}

// TestCommandCloseEndsWhatTheChildLeft: a launcher that exits as its stdin
// closes but leaves its own child running (a server that ignores stdin)
// exits 0, so Close returns nil, but only once that child is gone too.
func TestCommandCloseEndsWhatTheChildLeft(t *testing.T) {
	c, _, _, grandchild := startShell(t, `sleep 60 & echo "{\"pid\":$!}"; read x; exit 0`, nil)
	var err error
	within(t, 10*time.Second, "Close", func() { err = c.Close() })
	if err != nil {
		t.Errorf("Close = %v, want nil: the child exited 0", err)
	}
	if !gone(grandchild, 2*time.Second) {
		t.Errorf("the grandchild %d still runs after Close", grandchild)
	}
}

// TestCommandCloseTermsBeforeKilling: Close asks before it kills, as the MCP
// specification has a client end a stdio server: a child that exits on
// SIGTERM, here from a trap that says so, gets no SIGKILL, and its clean
// exit makes Close return nil.
func TestCommandCloseTermsBeforeKilling(t *testing.T) {
	t.Run("trap", func(t *testing.T) {
		c, _, stderr, grandchild := startShell(t, `trap 'echo trapped TERM >&2; exit 0' TERM; `+launcher, nil)
		var err error
		within(t, 10*time.Second, "Close", func() { err = c.Close() })
		if err != nil {
			t.Errorf("Close = %v, want nil: the child exited 0 on SIGTERM", err)
		}
		if out, _ := os.ReadFile(stderr); !strings.Contains(string(out), "trapped TERM") {
			t.Errorf("the child's stderr = %q; its TERM trap did not run", out)
		}
		if ps := c.ProcessState(); ps == nil || ps.ExitCode() != 0 {
			t.Errorf("ProcessState = %v, want exit status 0", ps)
		}
		if !gone(grandchild, 2*time.Second) {
			t.Errorf("the grandchild %d still runs after Close", grandchild)
		}
	})
	t.Run("default action", func(t *testing.T) {
		c := startChild(t, "ignore-stdin", &Options{GracePeriod: 100 * time.Millisecond})
		watchdog(t, c)
		var err error
		within(t, 10*time.Second, "Close", func() { err = c.Close() })
		if sig := signalOf(err); sig != syscall.SIGTERM || strings.Contains(err.Error(), "killed") {
			t.Errorf("Close = %v (signal %v), want the child ended by SIGTERM", err, sig)
		}
	})
}

// TestCommandKillsGroupIgnoringTerm: when the child and its own child ignore
// SIGTERM too, Close kills them all, GracePeriod after SIGTERM.
func TestCommandKillsGroupIgnoringTerm(t *testing.T) {
	c, _, _, grandchild := startShell(t, `trap '' TERM; `+launcher, nil) // the sleep inherits the ignored TERM
	start := time.Now()
	var err error
	within(t, 10*time.Second, "Close", func() { err = c.Close() })
	if elapsed := time.Since(start); elapsed < 2*200*time.Millisecond {
		t.Errorf("Close returned after %v, before its two grace periods", elapsed)
	}
	if sig := signalOf(err); sig != syscall.SIGKILL || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close = %v (signal %v), want the child killed, and said so", err, sig)
	}
	if !gone(grandchild, 2*time.Second) {
		t.Errorf("the grandchild %d still runs after Close", grandchild)
	}
}

// TestCommandKeepsSysProcAttr: Command sets Setpgid on a copy of the
// caller's SysProcAttr, whose fields it keeps: here Setsid, which makes a
// group of its own too.
func TestCommandKeepsSysProcAttr(t *testing.T) {
	attr := &syscall.SysProcAttr{Setsid: true}
	c, cmd, _, grandchild := startShell(t, launcher, attr)
	if !reflect.DeepEqual(*attr, syscall.SysProcAttr{Setsid: true}) {
		t.Errorf("Command changed the caller's SysProcAttr to %+v", *attr)
	}
	if cmd.SysProcAttr == nil || !cmd.SysProcAttr.Setsid {
		t.Errorf("cmd.SysProcAttr = %+v, want Setsid kept", cmd.SysProcAttr)
	}
	pid := cmd.Process.Pid
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// pid (comm) state ppid pgrp session ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if want := fmt.Sprint(pid); len(fields) < 4 || fields[3] != want {
			t.Errorf("the child's session = %v, want %s: Setsid was lost", fields, want)
		}
	}
	within(t, 10*time.Second, "Close", func() { c.Close() })
	if !gone(grandchild, 2*time.Second) {
		t.Errorf("the grandchild %d still runs after Close", grandchild)
	}
}

// TestCommandJoinedGroupNotSignalled: a child the caller puts in an existing
// process group (here the test's own) is signalled alone: the group is not
// the child's to end, and signalling it would signal this test too.
func TestCommandJoinedGroupNotSignalled(t *testing.T) {
	c, _, _, grandchild := startShell(t, launcher, &syscall.SysProcAttr{Setpgid: true, Pgid: syscall.Getpgrp()})
	var err error
	within(t, 10*time.Second, "Close", func() { err = c.Close() })
	if sig := signalOf(err); sig != syscall.SIGTERM {
		t.Errorf("Close = %v (signal %v), want the child ended by SIGTERM", err, sig)
	}
	if !alive(grandchild) {
		t.Errorf("the grandchild %d was signalled: Close signalled a group it does not own", grandchild)
	}
}
