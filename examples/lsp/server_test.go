package main

// In-process tests of the server over jsonrpc.Pipe, written to as raw wire
// text so that many messages can be in flight at once, as when a client
// sends without waiting for replies.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

var discard = slog.New(slog.DiscardHandler)

// rawClient writes raw messages to the server and collects what comes back.
type rawClient struct {
	t    *testing.T
	conn jsonrpc.Conn
	done chan struct{} // closed when the connection has ended

	mu      sync.Mutex
	changed chan struct{}
	replies map[string]reply // by raw id
	diags   []int32          // versions of the diagnostics published
}

type reply struct {
	Result json.RawMessage
	Error  *jsonrpc.Error
}

func newRawClient(t *testing.T, conn jsonrpc.Conn) *rawClient {
	c := &rawClient{
		t: t, conn: conn, done: make(chan struct{}),
		changed: make(chan struct{}), replies: make(map[string]reply),
	}
	t.Cleanup(func() {
		conn.Close()
		select {
		case <-c.done:
		case <-time.After(waitTimeout):
			t.Errorf("the raw client's reader did not end")
		}
	})
	go c.read()
	return c
}

func (c *rawClient) read() {
	defer close(c.done)
	for {
		msg, err := c.conn.Read()
		if err != nil {
			return
		}
		elems := []json.RawMessage{msg}
		if msg[0] == '[' { // the reply to a batch
			elems = nil
			if err := json.Unmarshal(msg, &elems); err != nil {
				c.t.Errorf("the server sent %s: %v", msg, err)
			}
		}
		for _, el := range elems {
			c.receive(el)
		}
	}
}

func (c *rawClient) receive(msg []byte) {
	var m struct {
		ID     json.RawMessage
		Method string
		Params PublishDiagnosticsParams
		reply
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		c.t.Errorf("the server sent %s: %v", msg, err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case m.Method == methodPublishDiagnostics && m.Params.Version != nil:
		c.diags = append(c.diags, *m.Params.Version)
	case m.Method == "":
		c.replies[string(m.ID)] = m.reply
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// send writes msgs in order, without waiting for any reply.
func (c *rawClient) send(msgs ...string) {
	c.t.Helper()
	timer := time.AfterFunc(waitTimeout, func() { c.conn.Close() }) // Close stops a stuck write
	defer timer.Stop()
	for _, m := range msgs {
		if err := c.conn.Write([]byte(m)); err != nil {
			c.t.Fatalf("writing %s: %v", m, err)
		}
	}
}

// reply waits, within waitTimeout, for the reply to id (raw JSON).
func (c *rawClient) reply(id string) reply {
	c.t.Helper()
	timeout := time.After(waitTimeout)
	for {
		c.mu.Lock()
		r, ok := c.replies[id]
		changed := c.changed
		c.mu.Unlock()
		if ok {
			return r
		}
		select {
		case <-changed:
		case <-timeout:
			c.t.Fatalf("no reply to id %s within %v", id, waitTimeout)
		}
	}
}

func request(id any, method string, params any) string {
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func notification(method string, params any) string {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// TestPipelined sends runs of messages without waiting for any reply in
// between, so that the Peer has many in hand at once, and checks what the
// library's ordering guarantees (notifications one at a time in arrival
// order, a call only after the notifications before it): a didOpen sent
// right before initialize is dropped, a hover sent right after a run of
// didChange sees every one of them, and the diagnostics go out in version
// order. What an editor waits for (the replies to initialize and
// shutdown), the test waits for too.
func TestPipelined(t *testing.T) {
	const uri, early = "file:///p.txt", "file:///early.txt"
	hover := func(uri string) TextDocumentPositionParams {
		return TextDocumentPositionParams{TextDocument: TextDocumentIdentifier{URI: uri}}
	}
	for round := range 20 {
		a, b := jsonrpc.Pipe()
		status := make(chan int, 1)
		go func() { status <- serve(a, discard) }()
		c := newRawClient(t, b)

		c.send(
			notification(methodDidOpen, DidOpenTextDocumentParams{TextDocument: TextDocumentItem{URI: early, Version: 1, Text: "too early"}}),
			request(1, methodInitialize, map[string]any{}),
		)
		if r := c.reply("1"); r.Error != nil {
			t.Fatalf("round %d: initialize: %v", round, r.Error)
		}

		msgs := []string{
			notification(methodInitialized, map[string]any{}),
			notification(methodDidOpen, DidOpenTextDocumentParams{TextDocument: TextDocumentItem{URI: uri, Version: 1, Text: "x"}}),
		}
		text := "x"
		const changes = 200
		for i := 1; i <= changes; i++ {
			at := Position{Character: uint32(len(text))}
			add := fmt.Sprintf(" w%d", i)
			text += add
			msgs = append(msgs, notification(methodDidChange, DidChangeTextDocumentParams{
				TextDocument:   VersionedTextDocumentIdentifier{URI: uri, Version: int32(1 + i)},
				ContentChanges: []TextDocumentContentChangeEvent{{Range: &Range{Start: at, End: at}, Text: add}},
			}))
			if i == changes/2 {
				msgs = append(msgs, request(2, methodHover, hover(uri)))
			}
		}
		msgs = append(msgs,
			request(3, methodHover, hover(uri)),
			request(4, methodHover, hover(early)),
		)
		c.send(msgs...)

		// The hover in the middle sees at least the changes before it (it
		// may see later ones too, which run concurrently with it); the last
		// sees them all.
		var h Hover
		r := c.reply("2")
		n := -1
		if r.Error == nil && json.Unmarshal(r.Result, &h) == nil {
			fmt.Sscanf(h.Contents.Value, "`x`\n\nThe document has %d words.", &n)
		}
		if n < 1+changes/2 || n > 1+changes {
			t.Errorf("round %d: hover after %d changes: %s %v", round, changes/2, r.Result, r.Error)
		}
		r = c.reply("3")
		if want := fmt.Sprintf("`x`\n\nThe document has %d words.", 1+changes); r.Error != nil || json.Unmarshal(r.Result, &h) != nil || h.Contents.Value != want {
			t.Errorf("round %d: hover after the changes: %s %v, want %q", round, r.Result, r.Error, want)
		}
		if r := c.reply("4"); r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("round %d: hover on the document opened before initialize: %s %+v, want not open", round, r.Result, r.Error)
		}

		c.send(request(5, methodShutdown, nil))
		if r := c.reply("5"); r.Error != nil || string(r.Result) != "null" {
			t.Errorf("round %d: shutdown: %s %v", round, r.Result, r.Error)
		}
		c.send(request(6, methodHover, hover(uri)))
		if r := c.reply("6"); r.Error == nil || r.Error.Code != jsonrpc.CodeInvalidRequest {
			t.Errorf("round %d: hover after shutdown: %+v", round, r)
		}
		c.send(notification(methodExit, nil))
		select {
		case code := <-status:
			if code != 0 {
				t.Fatalf("round %d: exit status %d, want 0", round, code)
			}
		case <-time.After(waitTimeout):
			t.Fatalf("round %d: the server did not exit", round)
		}
		c.mu.Lock()
		diags := c.diags
		c.mu.Unlock()
		for i, v := range diags {
			if v != int32(i+1) {
				t.Fatalf("round %d: diagnostics for versions %v, want 1..%d in order", round, diags, changes+1)
			}
		}
		if len(diags) != changes+1 {
			t.Errorf("round %d: %d diagnostics, want %d", round, len(diags), changes+1)
		}
	}
}

// TestShutdownThenExitUnanswered: a client that sends shutdown and then
// exit without waiting for the reply gets exit status 0, as LSP asks once
// shutdown was received: the exit notification may run before the
// shutdown request's handler, so the status is decided once the requests
// that arrived before exit have been served. (Before the fix: status 1 in
// most rounds.)
func TestShutdownThenExitUnanswered(t *testing.T) {
	for round := range 50 {
		a, b := jsonrpc.Pipe()
		status := make(chan int, 1)
		go func() { status <- serve(a, discard) }()
		c := newRawClient(t, b)
		c.send(request(1, methodInitialize, map[string]any{}))
		if r := c.reply("1"); r.Error != nil {
			t.Fatalf("round %d: initialize: %v", round, r.Error)
		}
		c.send(notification(methodInitialized, map[string]any{}), request(2, methodShutdown, nil), notification(methodExit, nil))
		select {
		case code := <-status:
			if code != 0 {
				t.Fatalf("round %d: exit status %d after shutdown, exit; want 0", round, code)
			}
		case <-time.After(waitTimeout):
			t.Fatalf("round %d: the server did not exit", round)
		}
	}
}

// TestProgressAndPartialResults: a Go client with jsonrpc.LSPProgress gets
// slowCount's work-done progress (begin, reports, end) and
// documentSymbol's partial results, every one before the final result.
func TestProgressAndPartialResults(t *testing.T) {
	a, b := jsonrpc.Pipe()
	status := make(chan int, 1)
	go func() { status <- serve(a, discard) }()
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Progress: jsonrpc.LSPProgress})
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	const uri = "file:///p.txt"
	text := strings.Repeat("one two three ", 9) // 27 words: parts of 10, 10, 7
	if err := client.Call(ctx, methodInitialize, map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	client.Notify(ctx, methodInitialized, map[string]any{})
	client.Notify(ctx, methodDidOpen, DidOpenTextDocumentParams{TextDocument: TextDocumentItem{URI: uri, Version: 1, Text: text}})

	var kinds []string
	pctx := jsonrpc.WithProgress(ctx, func(v json.RawMessage) {
		var p WorkDoneProgress
		json.Unmarshal(v, &p)
		kinds = append(kinds, p.Kind)
	})
	var count SlowCountResult
	if err := client.Call(pctx, methodSlowCount, SlowCountParams{TextDocument: TextDocumentIdentifier{URI: uri}, DelayMs: 20}, &count); err != nil || count.Words != 27 {
		t.Fatalf("slowCount: %+v, %v", count, err)
	}
	if got := strings.Join(kinds, " "); got != "begin report report report end" {
		t.Errorf("work-done progress before the result: %q", got)
	}

	var parts [][]SymbolInformation
	sctx := jsonrpc.WithPartialResults(ctx, func(v json.RawMessage) {
		var part []SymbolInformation
		json.Unmarshal(v, &part)
		parts = append(parts, part)
	})
	var final []SymbolInformation
	if err := client.Call(sctx, methodDocumentSymbol, map[string]any{"textDocument": map[string]string{"uri": uri}}, &final); err != nil || len(final) != 0 {
		t.Fatalf("documentSymbol: %v, %v", final, err)
	}
	var names []string
	for _, p := range parts {
		for _, s := range p {
			names = append(names, s.Name)
		}
	}
	if len(parts) != 3 || strings.Join(names, " ")+" " != text {
		t.Errorf("partial results before the final one: %d parts, %q", len(parts), names)
	}
	// Without a token: all at once.
	if err := client.Call(ctx, methodDocumentSymbol, map[string]any{"textDocument": map[string]string{"uri": uri}}, &final); err != nil || len(final) != 27 {
		t.Errorf("documentSymbol without a token: %d symbols, %v", len(final), err)
	}
	client.Close()
	<-status
}
