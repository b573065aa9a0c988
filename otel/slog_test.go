package otel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/otel"
	"go.opentelemetry.io/otel/codes"
)

// TestLogHandlerIDs: a record logged in a handler with its ctx carries the
// server span's trace and span ids; one without a span carries neither.
func TestLogHandlerIDs(t *testing.T) {
	r := newRig(t)
	var buf bytes.Buffer
	log := slog.New(otel.LogHandler(slog.NewJSONHandler(&buf, nil)))
	mux := jsonrpc.NewMux()
	mux.HandleFunc("hello", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		log.InfoContext(ctx, "in handler")
		return "hi", nil
	})
	a, b := jsonrpc.Pipe()
	tel := r.telemetry(t, otel.Options{Methods: []string{"hello"}})
	client := jsonrpc.NewPeer(a)
	server := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: mux, Interceptors: []jsonrpc.Interceptor{tel.Interceptor()}})
	defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
	if err := client.Call(context.Background(), "hello", nil, nil); err != nil {
		t.Fatal(err)
	}
	log.InfoContext(context.Background(), "outside")
	span := r.waitSpans(t, 1)[0]
	dec := json.NewDecoder(&buf)
	var in, out map[string]any
	if err := dec.Decode(&in); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	if in["trace_id"] != span.SpanContext().TraceID().String() || in["span_id"] != span.SpanContext().SpanID().String() {
		t.Errorf("record in the handler: %v, want trace_id %s span_id %s", in, span.SpanContext().TraceID(), span.SpanContext().SpanID())
	}
	if _, ok := out["trace_id"]; ok {
		t.Errorf("record without a span: %v, want no trace_id", out)
	}
}

// TestPanicLogCarriesSpan: the library's own record of a handler's panic,
// to an Options.Logger through LogHandler, carries the trace and span ids
// of the call's SERVER span, and that span ends with the Internal error
// (-32603) the caller gets.
func TestPanicLogCarriesSpan(t *testing.T) {
	r := newRig(t)
	var mu sync.Mutex
	var buf bytes.Buffer
	log := slog.New(otel.LogHandler(slog.NewJSONHandler(&lockedWriter{mu: &mu, w: &buf}, nil)))
	mux := jsonrpc.NewMux()
	mux.HandleFunc("boom", func(context.Context, *jsonrpc.Request) (any, error) { panic("boom") })
	a, b := jsonrpc.Pipe()
	tel := r.telemetry(t, otel.Options{Methods: []string{"boom"}})
	client := jsonrpc.NewPeer(a)
	server := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: mux, Logger: log, Interceptors: []jsonrpc.Interceptor{tel.Interceptor()}})
	defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
	var e *jsonrpc.Error
	if err := client.Call(context.Background(), "boom", nil, nil); !errors.As(err, &e) || e.Code != jsonrpc.CodeInternalError {
		t.Fatalf("boom: %v, want an Internal error", err)
	}
	span := r.waitSpans(t, 1)[0]
	if got := attrs(span.Attributes()); span.Status().Code != codes.Error || got["error.type"] != "-32603" {
		t.Errorf("the panicking call's span: status %v, %v; want Error and error.type -32603", span.Status(), got)
	}
	mu.Lock()
	defer mu.Unlock()
	var rec map[string]any
	if err := json.NewDecoder(&buf).Decode(&rec); err != nil {
		t.Fatalf("no record of the panic: %v", err)
	}
	if rec["msg"] != "jsonrpc: handler panicked" || rec["trace_id"] != span.SpanContext().TraceID().String() || rec["span_id"] != span.SpanContext().SpanID().String() {
		t.Errorf("the panic's record: %v, want trace_id %s span_id %s", rec, span.SpanContext().TraceID(), span.SpanContext().SpanID())
	}
}

// lockedWriter serialises writes to w (the handler's goroutine logs).
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
