package jsonrpc

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestHandlerPanicLoggedByDefault pins that a handler's panic, a bug of
// the program's own, is logged by default (to slog.Default, at Error, as
// net/http logs a handler's panic) when Options.Logger is not set: the
// caller gets only -32603, and two newcomers' nil-map panics were seen
// nowhere on the server. What a remote can cause (dropped replies,
// notification errors) stays silent by default.
func TestHandlerPanicLoggedByDefault(t *testing.T) {
	var out lockedBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&out, nil)))
	defer slog.SetDefault(prev)

	mux := NewMux()
	mux.HandleFunc("boom", func(context.Context, *Request) (any, error) {
		panic("assignment to entry in nil map") // as a newcomer's handler did
	})
	a, b := Pipe()
	server := NewPeer(a, Options{Handler: mux})
	client := NewPeer(b)
	defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
	err := client.Call(testCtx(t, wait), "boom", nil, nil)
	if e, ok := err.(*Error); !ok || e.Code != CodeInternalError {
		t.Fatalf("Call = %v, want -32603", err)
	}
	if got := out.String(); !strings.Contains(got, "handler panicked") || !strings.Contains(got, "method=boom") || !strings.Contains(got, "level=ERROR") {
		t.Fatalf("slog.Default got %q, want the panic at Error", got)
	}
}

// TestOverloadRefusalNamesItsBound pins that a call refused for want of
// inbound room says which bound to raise, in its error's data: a
// newcomer's LSP server refused a request after a 10 MB didOpen with a
// bare "Server overloaded".
func TestOverloadRefusalNamesItsBound(t *testing.T) {
	e := (&dispatcher{}).rejection()
	if e.Code != CodeOverloaded || !strings.Contains(string(e.Data), "MaxQueuedBytes") {
		t.Fatalf("refusal %d %q data %s, want %d naming MaxQueuedBytes", e.Code, e.Message, e.Data, CodeOverloaded)
	}
}
