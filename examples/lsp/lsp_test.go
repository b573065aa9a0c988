package main

// These tests run the server as an editor does: as a child process on the
// other end of its stdin and stdout (stdio.Command, header framing), driven
// by a jsonrpc.Peer that serves the diagnostics the server publishes.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/internal/testbin"
	"github.com/peerwire/jsonrpc/stdio"
)

// waitTimeout bounds every wait for the server: a reply, a notification,
// the end of the process.
const waitTimeout = 10 * time.Second

// serverBin is the server binary TestMain builds.
var serverBin string

func TestMain(m *testing.M) { testbin.Main(m, "lsp", &serverBin) }

// editor is the client side of one server process.
type editor struct {
	t      *testing.T
	conn   *stdio.Conn
	peer   *jsonrpc.Peer
	stderr lockedBuffer

	mu      sync.Mutex
	changed chan struct{}              // closed and replaced when anything below changes
	diags   []PublishDiagnosticsParams // as received, in order
	replies map[string]int64           // reply seen on the wire, by raw id: error code, or 0
	sent    map[string]string          // id of the last call of each method
}

// start runs the server with args and connects an editor to it.
func start(t *testing.T, args ...string) *editor {
	t.Helper()
	e := &editor{
		t:       t,
		changed: make(chan struct{}),
		replies: make(map[string]int64),
		sent:    make(map[string]string),
	}
	cmd := exec.Command(serverBin, args...)
	cmd.Stderr = &e.stderr
	// A race-enabled server would otherwise sleep a second before exiting.
	cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	conn, err := stdio.Command(cmd)
	if err != nil {
		t.Fatal(err)
	}
	e.conn = conn
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, methodPublishDiagnostics, func(ctx context.Context, p PublishDiagnosticsParams) (any, error) {
		e.update(func() { e.diags = append(e.diags, p) })
		return nil, nil
	})
	e.peer = jsonrpc.NewPeer(tapConn{conn, e}, jsonrpc.Options{
		Handler:      mux,
		Cancel:       jsonrpc.LSPCancel, // TestCancel relies on it
		Interceptors: []jsonrpc.Interceptor{e.noteCall},
	})
	t.Cleanup(e.stop)
	return e
}

// stop ends the connection, and the server with it, if it is still there.
func (e *editor) stop() {
	e.peer.Close()
	if !e.waitPeer() {
		e.t.Errorf("the client Peer did not end within %v", waitTimeout)
	}
}

// waitPeer waits, within waitTimeout, for the client Peer to end and for
// the server process to be reaped.
func (e *editor) waitPeer() bool {
	done := make(chan struct{})
	go func() {
		e.peer.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(waitTimeout):
		return false
	}
}

// update changes the recorded state under the lock and wakes the waiters.
func (e *editor) update(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f()
	close(e.changed)
	e.changed = make(chan struct{})
}

// waitFor waits, within waitTimeout, until cond (called with the lock held)
// holds.
func (e *editor) waitFor(what string, cond func() bool) {
	e.t.Helper()
	timeout := time.After(waitTimeout)
	for {
		e.mu.Lock()
		ok, changed := cond(), e.changed
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			e.t.Fatalf("waited %v for %s; server stderr:\n%s", waitTimeout, what, e.stderr.String())
		}
	}
}

// noteCall is a client Interceptor that records the id of each call sent.
func (e *editor) noteCall(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
	if info.Outbound && !info.ID.IsZero() {
		e.update(func() { e.sent[info.Method] = info.ID.String() })
	}
	return next(ctx)
}

// tapConn records the replies the server sends, including those the
// client Peer drops because their call was cancelled.
type tapConn struct {
	jsonrpc.Conn
	e *editor
}

func (c tapConn) Read() ([]byte, error) {
	msg, err := c.Conn.Read()
	if err == nil {
		var m struct {
			ID     json.RawMessage
			Method *string
			Result json.RawMessage
			Error  *jsonrpc.Error
		}
		if json.Unmarshal(msg, &m) == nil && m.Method == nil && m.ID != nil {
			code := int64(0)
			if m.Error != nil {
				code = m.Error.Code
			}
			c.e.update(func() { c.e.replies[string(m.ID)] = code })
		}
	}
	return msg, err
}

// call calls the server, within waitTimeout.
func (e *editor) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	return e.peer.Call(ctx, method, params, result)
}

// mustCall calls the server and fails the test if it answers an error.
func (e *editor) mustCall(method string, params, result any) {
	e.t.Helper()
	if err := e.call(method, params, result); err != nil {
		e.t.Fatalf("%s: %v; server stderr:\n%s", method, err, e.stderr.String())
	}
}

// callErr calls the server and checks that it answers an error with code.
func (e *editor) callErr(method string, params any, code int64) {
	e.t.Helper()
	err := e.call(method, params, nil)
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != code {
		e.t.Fatalf("%s: got %v, want an error with code %d", method, err, code)
	}
}

func (e *editor) notify(method string, params any) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := e.peer.Notify(ctx, method, params); err != nil {
		e.t.Fatalf("%s: %v", method, err)
	}
}

// initialize runs the start of the lifecycle and checks the capabilities.
func (e *editor) initialize() {
	e.t.Helper()
	var res InitializeResult
	e.mustCall(methodInitialize, map[string]any{
		"processId":    os.Getpid(),
		"clientInfo":   ClientInfo{Name: "lsp_test"},
		"capabilities": map[string]any{},
	}, &res)
	c := res.Capabilities
	if c.TextDocumentSync != syncIncremental || !c.HoverProvider || res.ServerInfo.Name != serverName || res.ServerInfo.Version == "" {
		e.t.Fatalf("initialize: got %+v", res)
	}
	e.notify(methodInitialized, map[string]any{})
}

// exit sends exit and returns the server's exit status.
func (e *editor) exit() int {
	e.t.Helper()
	e.notify(methodExit, nil)
	if !e.waitPeer() {
		e.t.Fatalf("the server did not exit within %v", waitTimeout)
	}
	st := e.conn.ProcessState()
	if st == nil {
		e.t.Fatal("no exit status")
	}
	return st.ExitCode()
}

// shutdownExit ends the session properly and checks that the server exits 0.
func (e *editor) shutdownExit() {
	e.t.Helper()
	var res json.RawMessage
	e.mustCall(methodShutdown, nil, &res)
	if string(res) != "null" {
		e.t.Errorf("shutdown result = %s, want null", res)
	}
	if code := e.exit(); code != 0 {
		e.t.Errorf("exit status after shutdown = %d, want 0; stderr:\n%s", code, e.stderr.String())
	}
}

func (e *editor) open(uri, text string) {
	e.t.Helper()
	e.notify(methodDidOpen, DidOpenTextDocumentParams{TextDocument: TextDocumentItem{
		URI: uri, LanguageID: "plaintext", Version: 1, Text: text,
	}})
}

func (e *editor) hover(uri string, p Position) (*Hover, error) {
	var h *Hover
	err := e.call(methodHover, TextDocumentPositionParams{TextDocument: TextDocumentIdentifier{URI: uri}, Position: p}, &h)
	return h, err
}

// lockedBuffer collects the server's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// The editor's own model of the text, kept independently of text.go: the
// test knows byte offsets and converts them to LSP positions itself.

// lspPos converts a byte offset in text (whose lines end in "\n") to an
// LSP position.
func lspPos(text string, off int) Position {
	before := text[:off]
	line := strings.Count(before, "\n")
	col := before[strings.LastIndexByte(before, '\n')+1:]
	return Position{Line: uint32(line), Character: uint32(len(utf16.Encode([]rune(col))))}
}

// edit is a change the test makes to its model and sends to the server.
type edit struct {
	start, end int // byte offsets in the model
	text       string
}

// apply applies e to *model and returns the matching LSP change.
func (ed edit) apply(model *string) TextDocumentContentChangeEvent {
	r := Range{Start: lspPos(*model, ed.start), End: lspPos(*model, ed.end)}
	*model = (*model)[:ed.start] + ed.text + (*model)[ed.end:]
	return TextDocumentContentChangeEvent{Range: &r, Text: ed.text}
}

// modelWords returns the words of text and their LSP ranges, found the
// simple way.
func modelWords(text string) (ws []string, rs []Range) {
	isWord := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) }
	start := -1
	for i, r := range text + " " {
		switch {
		case isWord(r) && start < 0:
			start = i
		case !isWord(r) && start >= 0:
			ws = append(ws, text[start:i])
			rs = append(rs, Range{Start: lspPos(text, start), End: lspPos(text, i)})
			start = -1
		}
	}
	return ws, rs
}

// TestEditing opens a document, changes it with 200 didChange
// notifications sent in a row, each computed from the text the previous
// ones left (incremental range edits, with non-ASCII text around them),
// and then at once asks for a hover whose answer depends on all of them.
// The server does nothing to order these itself: the exact answer is the
// library's guarantee at work (notifications one at a time in arrival
// order, and a call only once the notifications before it have been
// handled; see "Concurrency" in the package documentation of jsonrpc).
func TestEditing(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.initialize()
	const uri = "file:///tmp/notes.txt"
	model := "héllo 🙂 TODO wörld\n"
	e.open(uri, model)

	const changes = 200
	for i := 1; i <= changes; i++ {
		var evs []TextDocumentContentChangeEvent
		line0 := model[:strings.IndexByte(model, '\n')]
		switch i % 4 {
		case 0: // append a line
			marker := ""
			if i%20 == 0 {
				marker += " FIXME"
			}
			if i%30 == 0 {
				marker += " XXX"
			}
			evs = append(evs, edit{len(model), len(model), fmt.Sprintf("line%d 🙂 é%d%s\n", i, i, marker)}.apply(&model))
		case 1: // append a word to the first line
			evs = append(evs, edit{len(line0), len(line0), fmt.Sprintf(" a%d", i)}.apply(&model))
		case 2: // prepend a word
			evs = append(evs, edit{0, 0, fmt.Sprintf("b%d ", i)}.apply(&model))
		case 3: // two changes in one notification, the second after the first
			last := strings.LastIndexByte(model[:len(model)-1], '\n') + 1 // the last line
			emoji := last + strings.Index(model[last:], "🙂") + len("🙂")
			evs = append(evs, edit{emoji, emoji, fmt.Sprintf("x%d", i)}.apply(&model))
			first := strings.IndexByte(model, ' ') // the word before it
			evs = append(evs, edit{0, first, fmt.Sprintf("c%d", i)}.apply(&model))
		}
		e.notify(methodDidChange, DidChangeTextDocumentParams{
			TextDocument:   VersionedTextDocumentIdentifier{URI: uri, Version: int32(1 + i)},
			ContentChanges: evs,
		})
	}

	// The hover goes at once, without waiting for any diagnostics.
	words, ranges := modelWords(model)
	target := fmt.Sprintf("a%d", changes-3) // the last word added to line 0
	at := strings.Index(model, " "+target+"\n") + 1
	if at <= 0 {
		t.Fatalf("%q not in the model", target)
	}
	h, err := e.hover(uri, lspPos(model, at+2))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("`%s`\n\nThe document has %d words.", target, len(words))
	wantRange := Range{Start: lspPos(model, at), End: lspPos(model, at+len(target))}
	if h == nil || h.Contents.Value != want || h.Contents.Kind != "markdown" || h.Range == nil || *h.Range != wantRange {
		t.Fatalf("hover = %+v, want %q at %v", h, want, wantRange)
	}

	// Diagnostics for every version, in order, the last for the final text.
	final := int32(1 + changes)
	e.waitFor("the diagnostics of the final version", func() bool {
		n := len(e.diags)
		return n > 0 && e.diags[n-1].Version != nil && *e.diags[n-1].Version == final
	})
	e.mu.Lock()
	diags := e.diags
	e.mu.Unlock()
	if len(diags) != changes+1 {
		t.Errorf("got %d publishDiagnostics, want %d", len(diags), changes+1)
	}
	for i, d := range diags {
		if d.URI != uri || d.Version == nil || *d.Version != int32(i+1) {
			t.Fatalf("publishDiagnostics %d: uri %s, version %v; want version %d", i, d.URI, d.Version, i+1)
		}
	}
	var wantDiags []string
	for i, w := range words {
		if w == "TODO" || w == "FIXME" || w == "XXX" {
			wantDiags = append(wantDiags, fmt.Sprintf("%s@%v", w, ranges[i]))
		}
	}
	var gotDiags []string
	for _, d := range diags[len(diags)-1].Diagnostics {
		gotDiags = append(gotDiags, fmt.Sprintf("%s@%v", d.Code, d.Range))
	}
	if strings.Join(gotDiags, " ") != strings.Join(wantDiags, " ") {
		t.Errorf("final diagnostics:\n got %v\nwant %v", gotDiags, wantDiags)
	}
	// TODO in the first line, FIXME in every 20th change, XXX in every 60th.
	if len(wantDiags) != 1+changes/20+changes/60 {
		t.Errorf("the test's model has %d markers, want %d", len(wantDiags), 1+changes/20+changes/60)
	}

	// Closing the document clears its diagnostics.
	e.notify(methodDidClose, DidCloseTextDocumentParams{TextDocument: TextDocumentIdentifier{URI: uri}})
	e.waitFor("the diagnostics cleared", func() bool {
		d := e.diags[len(e.diags)-1]
		return d.Version == nil && len(d.Diagnostics) == 0
	})
	e.callErr(methodHover, TextDocumentPositionParams{TextDocument: TextDocumentIdentifier{URI: uri}}, jsonrpc.CodeInvalidParams)

	e.shutdownExit()
	if s := e.stderr.String(); s != "" {
		t.Errorf("stderr at the default log level is not quiet:\n%s", s)
	}
}

// TestCancel cancels a slow request by ending the ctx of the client's
// Call: the client Peer sends $/cancelRequest, and the server answers the
// request with RequestCancelled at once, then goes on serving.
func TestCancel(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.initialize()
	const uri = "file:///tmp/slow.txt"
	e.open(uri, "one two three")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	params := SlowCountParams{TextDocument: TextDocumentIdentifier{URI: uri}, DelayMs: 60_000}
	err := e.peer.Call(ctx, methodSlowCount, params, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slowCount with a 200ms ctx: got %v, want the ctx's error", err)
	}
	cancelled := time.Now()
	e.mu.Lock()
	id := e.sent[methodSlowCount]
	e.mu.Unlock()
	// The client has forgotten the call; its reply still comes, and the
	// tap on the connection sees it.
	e.waitFor("the reply to the cancelled slowCount", func() bool {
		_, ok := e.replies[id]
		return ok
	})
	if d := time.Since(cancelled); d > 2*time.Second {
		t.Errorf("the cancelled request was answered %v after the cancellation", d)
	}
	e.mu.Lock()
	code := e.replies[id]
	e.mu.Unlock()
	if code != jsonrpc.CodeRequestCancelled {
		t.Fatalf("reply to the cancelled slowCount: code %d, want %d", code, jsonrpc.CodeRequestCancelled)
	}

	// The server keeps serving.
	var res SlowCountResult
	params.DelayMs = 20
	e.mustCall(methodSlowCount, params, &res)
	if res.Words != 3 {
		t.Errorf("slowCount = %d words, want 3", res.Words)
	}
	params.DelayMs = -1
	e.callErr(methodSlowCount, params, jsonrpc.CodeInvalidParams)
	e.shutdownExit()
}

// TestLifecycle checks LSP's rules for initialize, shutdown and exit.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	const uri = "file:///tmp/a.txt"
	hover := TextDocumentPositionParams{TextDocument: TextDocumentIdentifier{URI: uri}}

	t.Run("request before initialize", func(t *testing.T) {
		t.Parallel()
		e := start(t)
		e.callErr(methodHover, hover, codeServerNotInitialized)
		e.callErr(methodShutdown, nil, codeServerNotInitialized)
		e.open(uri, "dropped: it came before initialize")
		e.initialize()
		e.callErr(methodHover, hover, jsonrpc.CodeInvalidParams) // not open
		e.open(uri, "now it is open")
		if h, err := e.hover(uri, Position{}); err != nil || !strings.Contains(h.Contents.Value, "has 4 words") {
			t.Errorf("hover = %+v, %v", h, err)
		}
		e.shutdownExit()
	})
	t.Run("initialize twice", func(t *testing.T) {
		t.Parallel()
		e := start(t)
		e.initialize()
		e.callErr(methodInitialize, map[string]any{"capabilities": map[string]any{}}, jsonrpc.CodeInvalidRequest)
		e.shutdownExit()
	})
	t.Run("requests after shutdown", func(t *testing.T) {
		t.Parallel()
		e := start(t)
		e.initialize()
		e.open(uri, "text")
		var res json.RawMessage
		e.mustCall(methodShutdown, nil, &res)
		e.callErr(methodHover, hover, jsonrpc.CodeInvalidRequest)
		e.callErr(methodShutdown, nil, jsonrpc.CodeInvalidRequest)
		e.callErr(methodInitialize, map[string]any{}, jsonrpc.CodeInvalidRequest)
		if code := e.exit(); code != 0 {
			t.Errorf("exit status = %d, want 0", code)
		}
	})
	t.Run("exit without shutdown", func(t *testing.T) {
		t.Parallel()
		e := start(t)
		e.initialize()
		if code := e.exit(); code != 1 {
			t.Errorf("exit status = %d, want 1", code)
		}
	})
	t.Run("exit before initialize", func(t *testing.T) {
		t.Parallel()
		e := start(t)
		if code := e.exit(); code != 1 {
			t.Errorf("exit status = %d, want 1", code)
		}
	})
	t.Run("input ends after shutdown", func(t *testing.T) {
		t.Parallel()
		e := start(t)
		e.initialize()
		e.mustCall(methodShutdown, nil, nil)
		e.peer.Close() // closes the server's stdin
		if !e.waitPeer() {
			t.Fatal("the server did not end")
		}
		if code := e.conn.ProcessState().ExitCode(); code != 0 {
			t.Errorf("exit status = %d, want 0", code)
		}
	})
}

// TestLogLevel checks that -log-level=info logs each message with its
// method, id and time taken.
func TestLogLevel(t *testing.T) {
	t.Parallel()
	e := start(t, "-log-level=info")
	e.initialize()
	e.callErr(methodHover, TextDocumentPositionParams{TextDocument: TextDocumentIdentifier{URI: "file:///none"}}, jsonrpc.CodeInvalidParams)
	e.shutdownExit()
	logs := e.stderr.String()
	for _, want := range []string{
		`msg="rpc in" method=initialize id=1 elapsed=`,
		`msg="rpc in" method=initialized elapsed=`,
		`msg="rpc in" method=textDocument/hover id=2 elapsed=`,
		`err="jsonrpc: code -32602: document not open`,
		`msg="rpc in" method=shutdown id=3 elapsed=`,
		`msg="rpc in" method=exit elapsed=`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, logs)
		}
	}
}

// TestBadFlag checks that a bad flag is refused with status 2.
func TestBadFlag(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, serverBin, "-log-level=loud").CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 || !strings.Contains(string(out), "usage:") {
		t.Errorf("got %v, %q; want status 2 and the usage", err, out)
	}
}
