package otel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/otel"
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
