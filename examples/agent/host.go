package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
)

const (
	// callTimeout bounds every call the host makes to a tool.
	callTimeout = 10 * time.Second
	// closeGrace is how long closing a tool waits for it to exit once its
	// stdin is closed, before killing it.
	closeGrace = 3 * time.Second
)

// host is the agent host: it owns the sandbox and the transcript, and serves
// the tools' callbacks.
type host struct {
	out *transcript
	log *slog.Logger
	box *sandbox
}

// runHost runs the agent session, writing its transcript to w. It fails if
// anything does not go as the session expects.
func runHost(w io.Writer) error {
	out := &transcript{w: w}
	h := &host{
		out: out,
		log: slog.New(slog.NewTextHandler(out.logWriter(), &slog.HandlerOptions{ReplaceAttr: withoutTime})),
		box: newSandbox(),
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	token := newToken()

	out.printf("agent host (pid %d): starting the tools as %q -tool NAME, line-framed JSON-RPC over their stdin/stdout\n",
		os.Getpid(), self)
	files, err := h.start(self, "files", token)
	if err != nil {
		return err
	}
	defer files.close()
	flaky, err := h.supervise(self, "flaky", token) // restarted when it crashes
	if err != nil {
		return err
	}
	defer flaky.close()

	for _, step := range []func() error{
		func() error { return h.listTools(files, flaky.running()) },
		func() error { return h.readAndDelete(files) },
		func() error { return h.withoutToken(files) },
		func() error { return h.batch(files) },
		func() error { return h.crash(flaky) },
		func() error { return h.afterCrash(files) },
	} {
		if err := step(); err != nil {
			return err
		}
	}

	out.section("Shutting down: close each tool's stdin and reap it")
	st, err := files.close()
	out.printf("  files exited with status %d%s\n", st.ExitCode(), errNote(err))
	if st.ExitCode() != 0 {
		return fmt.Errorf("files exited with %v, want status 0", st)
	}
	st, _ = flaky.close() // closed already: this returns what the first close saw
	out.printf("  flaky had already exited, with status %d\n", st.ExitCode())
	out.printf("\nagent host: done, no tool left running\n")
	return nil
}

// listTools asks every tool what it can do.
func (h *host) listTools(tools ...*tool) error {
	h.out.section("tools/list on each tool")
	for _, t := range tools {
		var list toolList
		if err := t.call("tools/list", nil, &list); err != nil {
			return fmt.Errorf("%s: tools/list: %w", t.name, err)
		}
		for _, ti := range list.Tools {
			h.out.printf("  %-6s %-13s %s\n", t.name, ti.Name, ti.Description)
		}
	}
	return nil
}

// readAndDelete reads a file and tries two deletions, one that the host's
// policy allows and one that it refuses.
func (h *host) readAndDelete(files *tool) error {
	h.out.section("files.read: the tool calls back host.readFile on the same pipe")
	if err := h.read(files, "/home/user/notes.txt"); err != nil {
		return err
	}

	h.out.section("files.delete: the tool asks host.confirm first")
	for _, p := range []string{"/home/user/todo.md", "/etc/hosts"} {
		var res deleteResult
		err := files.call("files.delete", pathParams{Path: p}, &res)
		switch {
		case err == nil && res.Deleted:
			h.out.printf("  files.delete %s: deleted\n", p)
		case isCode(err, CodeDeclined):
			h.out.printf("  files.delete %s: refused: %v\n", p, err)
		default:
			return fmt.Errorf("files.delete %s: %+v, %w", p, res, err)
		}
	}
	h.out.printf("  the sandbox now holds %s\n", strings.Join(h.box.list(), ", "))
	return nil
}

// withoutToken makes one call without the token, which the tool refuses.
func (h *host) withoutToken(files *tool) error {
	h.out.section("A call without the token")
	ctx := context.WithValue(context.Background(), noTokenKey{}, true)
	err := files.peer.Call(ctx, "files.read", pathParams{Path: "/home/user/notes.txt"}, nil)
	if !isCode(err, CodeUnauthorized) {
		return fmt.Errorf("files.read without a token: got %v, want code %d", err, CodeUnauthorized)
	}
	h.out.printf("  files.read without the token: refused by files: %v\n", err)

	// And the other way: a tool's call to the host without the token.
	var peek peekResult
	if err := files.call("files.peek", pathParams{Path: "/home/user/notes.txt"}, &peek); err != nil {
		return fmt.Errorf("files.peek: %w", err)
	}
	if !peek.Refused || peek.Code != CodeUnauthorized {
		return fmt.Errorf("files.peek: the host answered %+v, want a refusal with code %d", peek, CodeUnauthorized)
	}
	h.out.printf("  files.peek: the tool called host.readFile without the token: refused by the host (code %d, %q)\n", peek.Code, peek.Message)
	return nil
}

// batch sends three files.read in one array; one of them asks for a file
// outside the sandbox.
func (h *host) batch(files *tool) error {
	h.out.section("A batch: three files.read in one JSON array")
	paths := []string{"/home/user/notes.txt", "/etc/hosts", "/home/user/../../root/.ssh/id_rsa"}
	results := make([]readResult, len(paths))
	elems := make([]jsonrpc.BatchElem, len(paths))
	for i, p := range paths {
		elems[i] = jsonrpc.BatchElem{Method: "files.read", Params: pathParams{Path: p}, Result: &results[i]}
	}
	if err := files.batch(elems); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	for i, e := range elems {
		switch {
		case e.Error == nil:
			h.out.printf("  batch[%d] %s\n", i, results[i])
		case isCode(e.Error, CodeNotShared):
			h.out.printf("  batch[%d] files.read %s: refused: %v\n", i, paths[i], e.Error)
		default:
			return fmt.Errorf("batch[%d]: %w", i, e.Error)
		}
	}
	return nil
}

// crash calls flaky.echo, then flaky.crash, which kills the tool mid-call:
// the call fails with the crash as its cause, the supervisor starts flaky
// again, and the next call reaches the new process. Two more crashes in a
// row, and the supervisor gives up on it.
func (h *host) crash(flaky *supervisor) error {
	h.out.section("flaky: echo, then a crash in the middle of a call")
	var echo echoParams
	if err := flaky.call("flaky.echo", echoParams{Text: "hello, flaky"}, &echo); err != nil {
		return fmt.Errorf("flaky.echo: %w", err)
	}
	h.out.printf("  flaky.echo: %q\n", echo.Text)

	err := flaky.call("flaky.crash", nil, nil)
	var exit *exec.ExitError
	if !errors.Is(err, jsonrpc.ErrClosed) || !errors.As(err, &exit) || exit.ExitCode() != crashStatus {
		return fmt.Errorf("flaky.crash: got %v, want an error wrapping jsonrpc.ErrClosed and exit status %d", err, crashStatus)
	}
	h.out.printf("  flaky.crash: the call failed: %v (errors.Is ErrClosed: true; the cause is the crash: true)\n", err)

	if err := flaky.call("flaky.echo", echoParams{Text: "still there?"}, &echo); err != nil {
		return fmt.Errorf("flaky.echo after the restart: %w", err)
	}
	h.out.printf("  flaky.echo after the restart: %q (restarts: %d)\n", echo.Text, flaky.restartCount())

	h.out.section("flaky crashes twice more: the supervisor gives up")
	for range 2 {
		if err := flaky.call("flaky.crash", nil, nil); !errors.Is(err, jsonrpc.ErrClosed) {
			return fmt.Errorf("flaky.crash: got %v, want ErrClosed", err)
		}
		h.out.printf("  flaky.crash: the call failed\n")
	}
	err = flaky.call("flaky.echo", echoParams{Text: "still there?"}, nil)
	if !errors.Is(err, errGaveUp) {
		return fmt.Errorf("flaky.echo after giving up: got %v, want errGaveUp", err)
	}
	h.out.printf("  flaky.echo: fails at once: %v\n", err)
	return nil
}

// afterCrash shows that the files tool is unaffected by flaky's crash.
func (h *host) afterCrash(files *tool) error {
	h.out.section("files after the crash: still answering")
	return h.read(files, "/home/user/notes.txt")
}

// read calls files.read and prints its result.
func (h *host) read(files *tool, p string) error {
	var res readResult
	if err := files.call("files.read", pathParams{Path: p}, &res); err != nil {
		return fmt.Errorf("files.read %s: %w", p, err)
	}
	h.out.printf("  %s\n", res)
	return nil
}

func (r readResult) String() string {
	return fmt.Sprintf("files.read %s: %d lines, %d words, %d bytes", r.Path, r.Lines, r.Words, r.Bytes)
}

// isCode reports whether err is an *jsonrpc.Error with the given code.
func isCode(err error, code int64) bool {
	return errors.Is(err, &jsonrpc.Error{Code: code})
}

// errNote returns what Close of a tool's Conn said, for the transcript.
func errNote(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" (%v)", err)
}

// handler returns the methods the host serves to the tool named name.
func (h *host) handler(name string) *jsonrpc.Mux {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "host.readFile", func(_ context.Context, p pathParams) (fileContent, error) {
		content, err := h.box.read(p.Path)
		if err != nil {
			h.out.printf("    <- %s calls host.readFile %s: refused, outside the sandbox\n", name, p.Path)
			return fileContent{}, err
		}
		h.out.printf("    <- %s calls host.readFile %s: %d bytes sent\n", name, p.Path, len(content))
		return fileContent{Content: content}, nil
	})
	jsonrpc.Register(mux, "host.confirm", func(_ context.Context, p confirmParams) (bool, error) {
		yes, why := confirm(p.Path)
		answer := "no"
		if yes {
			answer = "yes"
		}
		h.out.printf("    <- %s calls host.confirm %q: %s (policy: %s)\n", name, p.Question, answer, why)
		return yes, nil
	})
	jsonrpc.Register(mux, "host.deleteFile", func(_ context.Context, p pathParams) (struct{}, error) {
		// The policy holds here too, whatever the tool says it asked.
		if yes, why := confirm(p.Path); !yes {
			return struct{}{}, jsonrpc.NewError(CodeDeclined, why, map[string]string{"path": p.Path})
		}
		if err := h.box.remove(p.Path); err != nil {
			return struct{}{}, err
		}
		h.out.printf("    <- %s calls host.deleteFile %s: removed from the sandbox\n", name, p.Path)
		return struct{}{}, nil
	})
	return mux
}

// logCalls is the host's interceptor that logs every outbound call with
// its method, id, duration and, if it failed, error.
func logCalls(log *slog.Logger) jsonrpc.Interceptor {
	return func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		if !info.Outbound {
			return next(ctx)
		}
		start := time.Now()
		res, err := next(ctx)
		attrs := []any{"method", info.Method, "id", info.ID.String(), "elapsed", time.Since(start).Round(time.Microsecond)}
		if err != nil {
			log.Warn("call failed", append(attrs, "err", err)...)
		} else {
			log.Info("call", attrs...)
		}
		return res, err
	}
}

// withoutTime drops the time from log records, for a steadier transcript.
func withoutTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// tool is a tool running as a child process, and the host's Peer on it.
type tool struct {
	name string
	pid  int
	conn *stdio.Conn
	peer *jsonrpc.Peer

	closeOnce sync.Once
	state     *os.ProcessState // set by close
	closeErr  error
}

// start starts self as the tool named name, handing it token.
func (h *host) start(self, name, token string) (*tool, error) {
	cmd := exec.Command(self, "-tool", name)
	cmd.Env = append(os.Environ(), tokenEnv+"="+token)
	conn, err := stdio.Command(cmd, stdio.Options{Framing: stdio.Line, GracePeriod: closeGrace})
	if err != nil {
		return nil, fmt.Errorf("starting tool %s: %w", name, err)
	}
	log := h.log.With("tool", name)
	peer := jsonrpc.NewPeer(conn, jsonrpc.Options{
		Handler:      h.handler(name),
		Logger:       log,
		Cancel:       jsonrpc.MCPCancel,
		Interceptors: []jsonrpc.Interceptor{logCalls(log), addToken(token), requireToken(token)},
	})
	h.out.printf("  started tool %s (pid %d)\n", name, cmd.Process.Pid)
	return &tool{name: name, pid: cmd.Process.Pid, conn: conn, peer: peer}, nil
}

// call calls method on the tool; the host's interceptor adds the token.
func (t *tool) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return t.peer.Call(ctx, method, params, result)
}

// batch sends elems as one batch; the interceptor adds the token to each.
func (t *tool) batch(elems []jsonrpc.BatchElem) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return t.peer.Batch(ctx, elems)
}

// close ends the connection, closing the tool's stdin, waits for the tool to
// exit (killing it after closeGrace) and returns its exit state, with what
// closing the Conn reported (an error for a non-zero status). It may be
// called more than once.
func (t *tool) close() (*os.ProcessState, error) {
	t.closeOnce.Do(func() {
		t.peer.Close() // closes the Conn, which reaps the child
		t.peer.Wait()  // the host's handlers never block: this is prompt
		t.closeErr = t.conn.Close()
		t.state = t.conn.ProcessState()
	})
	return t.state, t.closeErr
}

// transcript is what the host prints, safe for concurrent use: the
// handlers serving the tools' callbacks print from their own goroutines.
type transcript struct {
	mu sync.Mutex
	w  io.Writer
}

func (t *transcript) printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, format, args...)
}

func (t *transcript) section(title string) { t.printf("\n== %s\n", title) }

// logWriter returns a writer for the host's log records, which it indents
// in the transcript. A slog handler writes each record in one Write.
func (t *transcript) logWriter() io.Writer { return logLines{t} }

type logLines struct{ t *transcript }

func (l logLines) Write(p []byte) (int, error) {
	l.t.printf("    log: %s", p)
	return len(p), nil
}
