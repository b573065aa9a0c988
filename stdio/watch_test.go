package stdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

var _ jsonrpc.Watcher = (*Conn)(nil)

// TestGoneWhenChildExitsBehindUnreadOutput: a Peer that pushes back stops
// reading, and a child that dies behind output nobody reads would not be
// noticed until that output was. Gone closes when the child has exited,
// and GoneErr says how: a failed exit wraps its *exec.ExitError, a clean
// one io.EOF, as when the output ends. Read still returns every message the
// child wrote before it exited, then the end.
func TestGoneWhenChildExitsBehindUnreadOutput(t *testing.T) {
	for _, status := range []int{5, 0} {
		t.Run(map[int]string{5: "failed", 0: "clean"}[status], func(t *testing.T) {
			c := startChild(t, map[int]string{5: "flood-exit-5", 0: "flood-exit-0"}[status], &Options{Framing: Line})
			defer c.Close()
			watchdog(t, c)
			if err := c.GoneErr(); err != nil {
				t.Errorf("GoneErr before the exit = %v", err)
			}
			select {
			case <-c.Gone():
			case <-time.After(10 * time.Second):
				t.Fatal("Gone not closed 10 s after the child was started")
			}
			err := c.GoneErr()
			var exit *exec.ExitError
			switch {
			case status != 0 && (!errors.As(err, &exit) || exit.ExitCode() != status):
				t.Errorf("GoneErr = %v, want an error wrapping exit status %d", err, status)
			case status == 0 && (!errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "exited")):
				t.Errorf("GoneErr = %v, want an error wrapping io.EOF that says the child exited", err)
			}
			for i := range 160 { // nothing the child wrote is lost
				var msg []byte
				var err error
				within(t, time.Second, "Read after Gone", func() { msg, err = c.Read() })
				if err != nil || !strings.Contains(string(msg), fmt.Sprintf(`"n":%d,`, i)) {
					t.Fatalf("Read %d after Gone = %.40q, %v; want message %d", i, msg, err, i)
				}
			}
			var rerr error
			within(t, 2*time.Second, "the last Read", func() { _, rerr = c.Read() })
			if rerr == nil {
				t.Error("Read after the last message returned no error")
			}
		})
	}
}

// TestGoneNeverForOtherConns: only a Conn made by Command has a remote side
// whose going it can see; the others return a nil channel, which never
// fires.
func TestGoneNeverForOtherConns(t *testing.T) {
	if g := NewConn(nil, nil).Gone(); g != nil {
		t.Errorf("Gone of a NewConn Conn = %v, want nil", g)
	}
}

// TestPeerPushingBackSeesChildExit: a Peer whose notification lane is held
// by a handler that waits on its ctx, with its inbound budget full, stops
// reading its child; when the child crashes behind its unread output, the
// Peer still ends, with the crash as its cause, and the handler's ctx ends.
func TestPeerPushingBackSeesChildExit(t *testing.T) {
	c := startChild(t, "notify-flood-exit-3", &Options{Framing: Line})
	cancelled := make(chan struct{})
	var once sync.Once
	mux := jsonrpc.NewMux()
	mux.Handle("n", jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		once.Do(func() {
			<-ctx.Done() // a subscription that lives as long as the connection
			close(cancelled)
		})
		return nil, nil
	}))
	p := jsonrpc.NewPeer(c, jsonrpc.Options{Handler: mux, MaxQueuedBytes: 8 << 10})
	defer p.Close()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the Peer has not ended 10 s after starting a child that crashes at once")
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's ctx did not end with the connection")
	}
	var exit *exec.ExitError
	if err := p.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("Wait = %v, want the child's exit status 3", err)
	}
}
