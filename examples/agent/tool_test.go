package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/internal/testbin"
	"github.com/peerwire/jsonrpc/stdio"
)

const (
	testToken       = "test-token-0123456789"
	testCallTimeout = 10 * time.Second // bounds every call the tests make
	exitGrace       = 5 * time.Second  // how long a tool may take to exit
)

// toolConn is a tool started directly by a test, and the test's Peer on it.
type toolConn struct {
	peer   *jsonrpc.Peer
	conn   *stdio.Conn
	stderr *testbin.Buffer
}

// startTool starts the agent as the named tool with testToken, as the host
// would, and serves h to it. The test's cleanup closes the connection, which
// ends and reaps the child.
func startTool(t *testing.T, name string, h jsonrpc.Handler) *toolConn {
	t.Helper()
	cmd := exec.Command(binPath, "-tool", name)
	cmd.Env = childEnv(tokenEnv + "=" + testToken)
	tc := &toolConn{stderr: new(testbin.Buffer)}
	cmd.Stderr = tc.stderr
	conn, err := stdio.Command(cmd, stdio.Options{Framing: stdio.Line, GracePeriod: exitGrace})
	if err != nil {
		t.Fatal(err)
	}
	tc.conn = conn
	// The test plays the host, which speaks MCP's cancellation dialect.
	tc.peer = jsonrpc.NewPeer(conn, jsonrpc.Options{Handler: h, Cancel: jsonrpc.MCPCancel})
	t.Cleanup(func() {
		tc.peer.Close()
		tc.peer.Wait()
		conn.Close()
		if strings.Contains(tc.stderr.String(), "DATA RACE") {
			t.Errorf("the race detector fired in tool %s:\n%s", name, tc.stderr.String())
		}
	})
	return tc
}

// call calls method with the token added to params.
func (tc *toolConn) call(t *testing.T, method string, params, result any) error {
	t.Helper()
	p, err := withToken(params, testToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testCallTimeout)
	defer cancel()
	return tc.peer.Call(ctx, method, p, result)
}

// fakeHost serves host.readFile, host.confirm and host.deleteFile to a tool
// from a map, and records the callbacks.
type fakeHost struct {
	mu    sync.Mutex
	files map[string]string
	calls []string
}

func (h *fakeHost) record(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, s)
}

// took returns the callbacks recorded since the last call, sorted.
func (h *fakeHost) took() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.calls
	h.calls = nil
	slices.Sort(c)
	return c
}

func (h *fakeHost) mux() *jsonrpc.Mux {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "host.readFile", func(_ context.Context, p pathParams) (fileContent, error) {
		h.record("readFile " + p.Path)
		h.mu.Lock()
		defer h.mu.Unlock()
		c, ok := h.files[p.Path]
		if !ok {
			return fileContent{}, notShared(p.Path)
		}
		return fileContent{Content: c}, nil
	})
	jsonrpc.Register(mux, "host.confirm", func(_ context.Context, p confirmParams) (bool, error) {
		h.record(fmt.Sprintf("confirm %q", p.Question))
		yes, _ := confirm(p.Path)
		return yes, nil
	})
	jsonrpc.Register(mux, "host.deleteFile", func(_ context.Context, p pathParams) (struct{}, error) {
		h.record("deleteFile " + p.Path)
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.files, p.Path)
		return struct{}{}, nil
	})
	return mux
}

// wantCode fails the test unless err is an *jsonrpc.Error with code.
func wantCode(t *testing.T, what string, err error, code int64) {
	t.Helper()
	var e *jsonrpc.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Errorf("%s: got %v, want an error with code %d", what, err, code)
	}
}

// TestFilesTool drives the files tool from the test: the test calls it, and
// it calls back the test's host methods on the same pipe.
func TestFilesTool(t *testing.T) {
	h := &fakeHost{files: map[string]string{
		"/data/a.txt": "one two\nthree",
		"/data/b.txt": "",
		"/etc/passwd": "root:x:0:0::/root:/bin/sh\n",
	}}
	tc := startTool(t, "files", h.mux())

	var list toolList
	if err := tc.call(t, "tools/list", nil, &list); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(list.Tools); !strings.Contains(got, "files.read") || !strings.Contains(got, "files.delete") || !strings.Contains(got, "files.peek") || len(list.Tools) != 3 {
		t.Errorf("tools/list = %s", got)
	}

	t.Run("read calls back the host", func(t *testing.T) {
		var res readResult
		if err := tc.call(t, "files.read", pathParams{Path: "/data/a.txt"}, &res); err != nil {
			t.Fatal(err)
		}
		if want := (readResult{Path: "/data/a.txt", Lines: 2, Words: 3, Bytes: 13}); res != want {
			t.Errorf("files.read = %+v, want %+v", res, want)
		}
		if got := h.took(); !slices.Equal(got, []string{"readFile /data/a.txt"}) {
			t.Errorf("callbacks = %q", got)
		}
	})

	t.Run("the host's error goes back as is", func(t *testing.T) {
		err := tc.call(t, "files.read", pathParams{Path: "/secret"}, nil)
		wantCode(t, "files.read /secret", err, CodeNotShared)
		var e *jsonrpc.Error
		if errors.As(err, &e) && !strings.Contains(string(e.Data), "/secret") {
			t.Errorf("error data = %s, want the path", e.Data)
		}
		h.took()
	})

	t.Run("delete under /etc is declined", func(t *testing.T) {
		err := tc.call(t, "files.delete", pathParams{Path: "/etc/passwd"}, nil)
		wantCode(t, "files.delete /etc/passwd", err, CodeDeclined)
		if got := h.took(); !slices.Equal(got, []string{`confirm "Delete /etc/passwd?"`}) {
			t.Errorf("callbacks = %q, want only the confirmation", got)
		}
	})

	t.Run("delete elsewhere is confirmed", func(t *testing.T) {
		var res deleteResult
		if err := tc.call(t, "files.delete", pathParams{Path: "/data/b.txt"}, &res); err != nil {
			t.Fatal(err)
		}
		if !res.Deleted {
			t.Errorf("files.delete = %+v", res)
		}
		want := []string{`confirm "Delete /data/b.txt?"`, "deleteFile /data/b.txt"}
		if got := h.took(); !slices.Equal(got, want) {
			t.Errorf("callbacks = %q, want %q", got, want)
		}
	})

	t.Run("calls without the token are refused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), testCallTimeout)
		defer cancel()
		wrong, _ := withToken(pathParams{Path: "/data/a.txt"}, "not-the-token")
		for _, tt := range []struct {
			what   string
			params any
		}{
			{"no params", nil},
			{"no _meta", pathParams{Path: "/data/a.txt"}},
			{"wrong token", wrong},
			{"positional params", []string{"/data/a.txt"}},
			{"_meta not an object", json.RawMessage(`{"_meta":"` + testToken + `","path":"/data/a.txt"}`)},
		} {
			err := tc.peer.Call(ctx, "files.read", tt.params, nil)
			wantCode(t, tt.what, err, CodeUnauthorized)
		}
		wantCode(t, "tools/list", tc.peer.Call(ctx, "tools/list", nil, nil), CodeUnauthorized)
		if got := h.took(); len(got) != 0 {
			t.Errorf("a refused call reached the handler: callbacks %q", got)
		}
	})

	t.Run("batch", func(t *testing.T) {
		var a, b readResult
		elems := []jsonrpc.BatchElem{
			{Method: "files.read", Params: mustToken(t, pathParams{Path: "/data/a.txt"}), Result: &a},
			{Method: "files.read", Params: mustToken(t, pathParams{Path: "/etc/passwd"}), Result: &b},
		}
		ctx, cancel := context.WithTimeout(context.Background(), testCallTimeout)
		defer cancel()
		if err := tc.peer.Batch(ctx, elems); err != nil {
			t.Fatal(err)
		}
		for i, e := range elems {
			if e.Error != nil {
				t.Errorf("batch[%d]: %v", i, e.Error)
			}
		}
		if a.Words != 3 || b.Lines != 1 {
			t.Errorf("batch results %+v, %+v", a, b)
		}
		want := []string{"readFile /data/a.txt", "readFile /etc/passwd"}
		if got := h.took(); !slices.Equal(got, want) {
			t.Errorf("callbacks = %q, want %q", got, want)
		}
	})

	t.Run("concurrent calls, callbacks interleaved on one pipe", func(t *testing.T) {
		const n = 32
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				var res readResult
				errs[i] = tc.call(t, "files.read", pathParams{Path: "/data/a.txt"}, &res)
				if errs[i] == nil && res.Bytes != 13 {
					errs[i] = fmt.Errorf("result %+v", res)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Error(err)
		}
		if got := len(h.took()); got != n {
			t.Errorf("%d callbacks, want %d", got, n)
		}
	})

	// Closing the tool's stdin ends it cleanly.
	if err := tc.peer.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tc.conn.Close(); err != nil {
		t.Errorf("closing the tool: %v", err)
	}
	if st := tc.conn.ProcessState(); st == nil || st.ExitCode() != 0 {
		t.Errorf("tool exit state %v, want status 0", st)
	}
}

func mustToken(t *testing.T, params any) json.RawMessage {
	t.Helper()
	p, err := withToken(params, testToken)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFlakyCrash checks what a caller sees when the tool dies in the middle
// of a call: the pending Call fails promptly with ErrClosed, wrapping the
// cause, and the exit status is in the Conn's ProcessState after Close.
func TestFlakyCrash(t *testing.T) {
	tc := startTool(t, "flaky", nil)

	var echo echoParams
	if err := tc.call(t, "flaky.echo", echoParams{Text: "ping"}, &echo); err != nil || echo.Text != "ping" {
		t.Fatalf("flaky.echo = %+v, %v", echo, err)
	}
	if st := tc.conn.ProcessState(); st != nil {
		t.Errorf("ProcessState = %v while the tool runs, want nil", st)
	}

	// The tool exits 200 ms into the call, so the call is surely pending.
	const delay = 200 * time.Millisecond
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- tc.call(t, "flaky.crash", crashParams{AfterMS: int(delay / time.Millisecond)}, nil) }()
	var err error
	select {
	case err = <-errc:
	case <-time.After(testCallTimeout + time.Second):
		t.Fatal("flaky.crash never returned")
	}
	elapsed := time.Since(start)
	var cause *exec.ExitError
	if !errors.Is(err, jsonrpc.ErrClosed) || !errors.As(err, &cause) || cause.ExitCode() != crashStatus {
		t.Errorf("flaky.crash: got %v, want an error wrapping jsonrpc.ErrClosed and its cause, exit status %d", err, crashStatus)
	}
	if elapsed < delay || elapsed > delay+time.Second {
		t.Errorf("flaky.crash returned after %v, want between %v and %v", elapsed, delay, delay+time.Second)
	}
	select {
	case <-tc.peer.Done():
	case <-time.After(time.Second):
		t.Error("the Peer did not end within 1s of the tool's exit")
	}

	// Calls fail at once from now on.
	start = time.Now()
	if err := tc.call(t, "flaky.echo", echoParams{Text: "ping"}, nil); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Errorf("flaky.echo after the crash: %v, want ErrClosed", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("flaky.echo after the crash took %v", d)
	}

	tc.peer.Close()
	if err := tc.peer.Wait(); !errors.As(err, &cause) || cause.ExitCode() != crashStatus {
		t.Errorf("Wait = %v, want the crash (exit status %d) as the cause", err, crashStatus)
	}
	cerr := tc.conn.Close()
	var exit *exec.ExitError
	if !errors.As(cerr, &exit) || exit.ExitCode() != crashStatus {
		t.Errorf("closing the Conn: %v, want an *exec.ExitError with status %d", cerr, crashStatus)
	}
	if st := tc.conn.ProcessState(); st == nil || st.ExitCode() != crashStatus {
		t.Errorf("ProcessState = %v, want exit status %d", st, crashStatus)
	}
}

// TestCancelReachesTheHost checks that host and tool speak MCP's
// cancellation dialect (notifications/cancelled) both ways: when the host
// stops waiting for files.read, the tool's handler is cancelled, and so is
// the callback it was waiting on, whose handler runs in the host.
func TestCancelReachesTheHost(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "host.readFile", func(ctx context.Context, p pathParams) (fileContent, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return fileContent{}, ctx.Err()
	})
	tc := startTool(t, "files", mux)

	p := mustToken(t, pathParams{Path: "/data/slow.txt"})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- tc.peer.Call(ctx, "files.read", p, nil) }()
	select {
	case <-started:
	case <-time.After(testCallTimeout):
		t.Fatal("the tool never called host.readFile")
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("files.read after cancel: %v, want context.Canceled", err)
	}
	select {
	case <-cancelled:
	case <-time.After(testCallTimeout):
		t.Fatal("host.readFile was not cancelled: the tool did not pass the cancellation on")
	}
}
