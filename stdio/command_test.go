package stdio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// startChild runs the test binary as a child in the given mode.
func startChild(t *testing.T, mode string, opts *Options) *Conn {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	// Under the race detector a process sleeps 1 s before exiting unless
	// told otherwise.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "GORACE="+gorace)
	var o []Options
	if opts != nil {
		o = append(o, *opts)
	}
	c, err := Command(cmd, o...)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Stderr != os.Stderr {
		t.Errorf("cmd.Stderr = %v, want os.Stderr", cmd.Stderr)
	}
	return c
}

// watchdog closes c if the test runs for 20 s: Close is what stops a
// Conn's pending Read and Write, so a stuck test fails instead of hanging.
func watchdog(t *testing.T, c *Conn) {
	timer := time.AfterFunc(20*time.Second, func() { c.Close() })
	t.Cleanup(func() { timer.Stop() })
}

func TestCommandEcho(t *testing.T) {
	for _, f := range framings {
		t.Run(f.String(), func(t *testing.T) {
			c := startChild(t, "echo-"+strings.ToLower(f.String()), &Options{Framing: f})
			watchdog(t, c)
			for i := range 50 {
				msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":[%q]}`,
					i, strings.Repeat("e", i*i*40))
				if err := c.Write([]byte(msg)); err != nil {
					t.Fatalf("Write %d: %v", i, err)
				}
				got, err := c.Read()
				if err != nil || string(got) != msg {
					t.Fatalf("Read %d = %.60q, %v; want %.60q", i, got, err, msg)
				}
			}
			if ps := c.ProcessState(); ps != nil {
				t.Errorf("ProcessState before Close = %v, want nil", ps)
			}
			var err error
			within(t, 10*time.Second, "Close", func() { err = c.Close() })
			if err != nil {
				t.Errorf("Close: %v", err)
			}
			if ps := c.ProcessState(); ps == nil || !ps.Success() {
				t.Errorf("ProcessState after Close = %v, want success", ps)
			}
			if _, err := c.Read(); !isClosedErr(err) {
				t.Errorf("Read after Close: %v", err)
			}
		})
	}
}

// TestCommandCloseWithoutReading closes while the child is still echoing
// messages nobody reads: Close must drain them so the child exits cleanly
// instead of dying of a broken pipe.
func TestCommandCloseWithoutReading(t *testing.T) {
	c := startChild(t, "echo-line", &Options{Framing: Line})
	watchdog(t, c)
	for i := range 40 {
		msg := fmt.Sprintf(`{"id":%d,"pad":%q}`, i, strings.Repeat("p", 1000))
		if err := c.Write([]byte(msg)); err != nil {
			t.Fatalf("Write %d: %v", i, err)
		}
	}
	var err error
	within(t, 10*time.Second, "Close", func() { err = c.Close() })
	if err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestCommandCloseUnblocksRead closes while a Read waits for a reply.
func TestCommandCloseUnblocksRead(t *testing.T) {
	c := startChild(t, "echo-header", nil)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	var err error
	within(t, 10*time.Second, "Close", func() { err = c.Close() })
	if err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !isClosedErr(err) {
			t.Errorf("Read error = %v, want a closed error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read still blocked after Close")
	}
}

// TestCommandKillAfterGrace: a child that ignores both its stdin closing
// and SIGTERM is killed, and Close says so.
func TestCommandKillAfterGrace(t *testing.T) {
	const grace = 200 * time.Millisecond
	c := startChild(t, "ignore-term", &Options{Framing: Line, GracePeriod: grace})
	watchdog(t, c)
	if _, err := c.Read(); err != nil { // SIGTERM is ignored from now on
		t.Fatalf("Read the child's ready message: %v", err)
	}
	start := time.Now()
	var err error
	within(t, 10*time.Second, "Close", func() { err = c.Close() })
	elapsed := time.Since(start)
	if elapsed < grace {
		t.Errorf("Close returned after %v, before the grace period", elapsed)
	}
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close error = %v, want one saying the child was killed", err)
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Errorf("Close error %v does not wrap an *exec.ExitError", err)
	}
	if ps := c.ProcessState(); ps == nil || ps.Success() {
		t.Errorf("ProcessState = %v, want a failure", ps)
	}
	if err2 := c.Close(); err2 != err {
		t.Errorf("second Close = %v, want %v", err2, err)
	}
}

func TestCommandNegativeGraceKillsAtOnce(t *testing.T) {
	c := startChild(t, "ignore-stdin", &Options{GracePeriod: -1})
	var err error
	within(t, 2*time.Second, "Close", func() { err = c.Close() })
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close error = %v, want one saying the child was killed", err)
	}
}

func TestCommandCrash(t *testing.T) {
	c := startChild(t, "crash", nil)
	watchdog(t, c)
	var err error
	within(t, 10*time.Second, "Read", func() { _, err = c.Read() })
	// The crash, not a clean io.EOF, is what ended the stream.
	var readExit *exec.ExitError
	if errors.Is(err, io.EOF) || !errors.As(err, &readExit) || readExit.ExitCode() != 3 {
		t.Errorf("Read from a crashed child = %v, want an error wrapping exit status 3", err)
	}
	within(t, 10*time.Second, "Close", func() { err = c.Close() })
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Errorf("Close = %v, want exit status 3", err)
	}
	if ps := c.ProcessState(); ps == nil || ps.ExitCode() != 3 {
		t.Errorf("ProcessState = %v, want exit status 3", ps)
	}
	// Writing to the dead child fails rather than killing us with SIGPIPE.
	c2 := startChild(t, "crash", nil)
	defer c2.Close()
	within(t, 10*time.Second, "Read", func() { c2.Read() })
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if err = c2.Write([]byte("{}")); err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // the child's stdin may close just after its stdout
	}
	if err == nil {
		t.Error("Writes to a dead child succeeded")
	}
}

func TestCommandErrors(t *testing.T) {
	cmd := exec.Command("true")
	cmd.Stdin = strings.NewReader("")
	if _, err := Command(cmd); err == nil {
		t.Error("Command with Stdin set succeeded")
	}
	cmd = exec.Command("true")
	cmd.Stdout = io.Discard
	if _, err := Command(cmd); err == nil {
		t.Error("Command with Stdout set succeeded")
	}
	cmd = exec.Command("/nonexistent/stdio-test-binary")
	if _, err := Command(cmd); err == nil {
		t.Error("Command with a missing binary succeeded")
	}
	if ps := NewConn(nil, nil).ProcessState(); ps != nil {
		t.Errorf("ProcessState of a NewConn Conn = %v", ps)
	}
}

// TestStdioCloseFromHandler: a handler of a Peer on Stdio closes its Peer
// while the parent keeps the child's stdin open; Close must interrupt the
// read loop's Read on stdin, so the child exits on its own.
func TestStdioCloseFromHandler(t *testing.T) {
	c := startChild(t, "close-from-handler", &Options{Framing: Line})
	defer c.Close()
	watchdog(t, c)
	if err := c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"quit"}`)); err != nil {
		t.Fatal(err)
	}
	// The child ends its output when it exits; its reply may or may not
	// have been written first.
	var err error
	within(t, 5*time.Second, "the child's exit", func() {
		for err == nil {
			_, err = c.Read()
		}
	})
	if !errors.Is(err, io.EOF) {
		t.Errorf("Read = %v, want io.EOF once the child exited 0", err)
	}
	// Its stdout ending is not enough: the child itself must be gone,
	// with its stdin still open on our side.
	select {
	case <-c.proc.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the child is still running: Close in its handler did not end its read loop")
	}
}
