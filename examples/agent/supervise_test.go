package main

import (
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// TestSupervisorRestartsKilledTool kills a tool in the middle of a call:
// the call fails with the crash as its cause, the tool is running again
// within the backoff (plus the time a process takes to start), and the
// next call succeeds on the new process.
func TestSupervisorRestartsKilledTool(t *testing.T) {
	h := &host{out: &transcript{w: io.Discard}, log: slog.New(slog.DiscardHandler), box: newSandbox()}
	s, err := h.supervise(binPath, "flaky", newToken())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	first := s.running()

	errc := make(chan error, 1)
	go func() { errc <- s.call("flaky.crash", crashParams{AfterMS: 5000}, nil) }() // in flight until killed
	time.Sleep(100 * time.Millisecond)
	killed := time.Now()
	if err := syscall.Kill(first.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		var exit *exec.ExitError
		if !errors.Is(err, jsonrpc.ErrClosed) || !errors.As(err, &exit) || exit.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the call in flight: %v; want ErrClosed with the kill as its cause", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight did not fail after the kill")
	}

	const bound = minRestart + 2*time.Second // the backoff, and a process start on a loaded machine
	for s.restartCount() == 0 && time.Since(killed) < bound {
		time.Sleep(5 * time.Millisecond)
	}
	if s.restartCount() != 1 {
		t.Fatalf("the tool was not restarted within %v", bound)
	}
	var echo echoParams
	if err := s.call("flaky.echo", echoParams{Text: "back"}, &echo); err != nil || echo.Text != "back" {
		t.Fatalf("flaky.echo after the restart: %+v, %v", echo, err)
	}
	if now := s.running(); now == nil || now.pid == first.pid {
		t.Errorf("running tool after the restart: %+v, want a new process", now)
	}
}
