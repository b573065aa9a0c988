package stdio

import (
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

var _ jsonrpc.Watcher = (*Conn)(nil)

// TestGoneWhenChildExitsBehindUnreadOutput: a Peer that pushes back stops
// reading, and a child that dies behind output nobody reads would not be
// noticed until that output was. Gone closes when the child has exited, and
// Read then fails at once, with the exit as the cause, however much unread
// output the pipe still holds: a failed exit wraps its *exec.ExitError, a
// clean one io.EOF, as when the output ends.
func TestGoneWhenChildExitsBehindUnreadOutput(t *testing.T) {
	for _, status := range []int{5, 0} {
		t.Run(map[int]string{5: "failed", 0: "clean"}[status], func(t *testing.T) {
			c := startChild(t, map[int]string{5: "flood-exit-5", 0: "flood-exit-0"}[status], &Options{Framing: Line})
			defer c.Close()
			watchdog(t, c)
			select {
			case <-c.Gone():
			case <-time.After(10 * time.Second):
				t.Fatal("Gone not closed 10 s after the child was started")
			}
			for i := range 2 { // and it stays so
				var msg []byte
				var err error
				within(t, time.Second, "Read after Gone", func() { msg, err = c.Read() })
				var exit *exec.ExitError
				switch {
				case msg != nil:
					t.Fatalf("Read %d after Gone = message %.40q, want the exit at once", i, msg)
				case status != 0 && (!errors.As(err, &exit) || exit.ExitCode() != status):
					t.Errorf("Read %d after Gone = %v, want an error wrapping exit status %d", i, err, status)
				case status == 0 && (!errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "exited")):
					t.Errorf("Read %d after Gone = %v, want an error wrapping io.EOF that says the child exited", i, err)
				}
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
