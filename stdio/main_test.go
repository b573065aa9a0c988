package stdio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"go.uber.org/goleak"
)

// childEnv names the environment variable that makes the test binary act as
// a child process for the Command tests instead of running the tests.
const childEnv = "STDIO_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	goleak.VerifyTestMain(m)
}

// runChild is the body of the child process and returns its exit status.
func runChild(mode string) int {
	switch mode {
	case "echo-header":
		return echo(Header)
	case "echo-line":
		return echo(Line)
	case "crash":
		return 3
	case "close-from-handler":
		return closeFromHandler()
	case "ignore-stdin":
		// Never reads stdin; the parent must signal it (SIGTERM ends it).
		// The sleep bounds the child's life should the parent fail to.
		time.Sleep(time.Minute)
		return 0
	case "flood-exit-0", "flood-exit-5":
		// Writes 16 KiB of messages, which the pipe holds, and exits
		// at once, whether or not they are read.
		for i := range 160 {
			fmt.Printf("{\"n\":%d,\"pad\":%q}\n", i, strings.Repeat("p", 80))
		}
		if mode == "flood-exit-5" {
			return 5
		}
		return 0
	case "notify-flood-exit-3":
		// Sends 32 KiB of notifications, which the pipe holds, then
		// crashes, whether or not they are read.
		for i := range 32 {
			fmt.Printf("{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":[%d,%q]}\n", i, strings.Repeat("p", 1000))
		}
		return 3
	case "example-tool":
		return exampleTool()
	case "ignore-term":
		// Ignores stdin and SIGTERM, and says so on stdout (Line framing)
		// once SIGTERM is ignored: only SIGKILL ends it.
		signal.Ignore(syscall.SIGTERM)
		fmt.Println(`{"ready":true}`)
		time.Sleep(time.Minute)
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
	return 2
}

// exampleTool is the child of ExampleCommand: a tool serving "upper" on
// stdin and stdout, one message per line, until its stdin ends.
func exampleTool() int {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "upper", func(_ context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	})
	if err := jsonrpc.Serve(Stdio(Options{Framing: Line}), jsonrpc.Options{Handler: mux}); err != nil {
		fmt.Fprintln(os.Stderr, "tool:", err)
		return 1
	}
	return 0
}

// echo writes back every message read from standard input until it ends.
func echo(f Framing) int {
	c := Stdio(Options{Framing: f})
	defer c.Close()
	for {
		msg, err := c.Read()
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "child read:", err)
			return 1
		}
		if err := c.Write(msg); err != nil {
			fmt.Fprintln(os.Stderr, "child write:", err)
			return 1
		}
	}
}

// closeFromHandler serves "quit", whose handler closes its own Peer, over
// Stdio, and exits 0 once the Peer has ended, while the parent keeps stdin
// open: Close must interrupt the read loop's pending Read on stdin.
func closeFromHandler() int {
	makeStdinBlocking()
	mux := jsonrpc.NewMux()
	mux.HandleFunc("quit", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.PeerFromContext(ctx).Close()
	})
	p := jsonrpc.NewPeer(Stdio(Options{Framing: Line}), jsonrpc.Options{Handler: mux})
	p.Wait()
	return 0
}

// tooLarge stands for a skipped message in the results of readAll.
const tooLarge = "<too large>"

// readAll reads from c until an error other than ErrMessageTooLarge and
// returns the messages read, tooLarge for each skipped one, and that error.
// It gives up after limit reads.
func readAll(t testing.TB, c *Conn, limit int) ([]string, error) {
	t.Helper()
	var got []string
	for range limit {
		msg, err := c.Read()
		switch {
		case errors.Is(err, jsonrpc.ErrMessageTooLarge):
			got = append(got, tooLarge)
		case err != nil:
			return got, err
		default:
			got = append(got, string(msg))
		}
	}
	t.Fatalf("still reading after %d messages", limit)
	return nil, nil
}

// decode reads every message of input with the given framing and cap.
func decode(t testing.TB, input []byte, f Framing, limit int64) ([]string, error) {
	t.Helper()
	c := NewConn(bytes.NewReader(input), io.Discard, Options{Framing: f, MaxMessageSize: limit})
	return readAll(t, c, len(input)+2)
}

// within runs fn in a goroutine and fails the test if it takes longer than d.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s took more than %v", what, d)
	}
}
