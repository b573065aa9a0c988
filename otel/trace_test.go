package otel_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// byKind returns the one span of kind among spans.
func byKind(t *testing.T, spans []sdktrace.ReadOnlySpan, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	var found sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanKind() == kind {
			if found != nil {
				t.Fatalf("two %v spans: %v", kind, names(spans))
			}
			found = s
		}
	}
	if found == nil {
		t.Fatalf("no %v span: %v", kind, names(spans))
	}
	return found
}

// TestCallSpans pins the attributes of a listed method's client and server
// spans: exactly these, nothing else, and an unset status.
func TestCallSpans(t *testing.T) {
	r := newRig(t)
	client, _, _ := r.pair(t, otel.Options{Methods: []string{"add"}}, jsonrpc.Options{})
	var sum int
	if err := client.Call(context.Background(), "add", [2]int{2, 3}, &sum); err != nil || sum != 5 {
		t.Fatalf("add: %d, %v", sum, err)
	}
	spans := r.waitSpans(t, 2)
	for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		s := byKind(t, spans, kind)
		want := map[string]string{"rpc.system.name": "jsonrpc", "rpc.method": "add", "jsonrpc.protocol.version": "2.0", "jsonrpc.request.id": "1"}
		if got := attrs(s.Attributes()); s.Name() != "add" || !maps.Equal(got, want) {
			t.Errorf("%v span %q: %v, want name add and %v", kind, s.Name(), got, want)
		}
		if s.Status().Code != codes.Unset {
			t.Errorf("%v span status %v, want unset", kind, s.Status())
		}
	}
}

// TestOtherMethod: a method not on the allow-list is rpc.method "_OTHER",
// the span named "jsonrpc", and its name only in rpc.method_original.
func TestOtherMethod(t *testing.T) {
	r := newRig(t)
	client, _, _ := r.pair(t, otel.Options{Methods: []string{"echo"}}, jsonrpc.Options{})
	if err := client.Call(context.Background(), "add", [2]int{1, 1}, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.waitSpans(t, 2) {
		got := attrs(s.Attributes())
		if s.Name() != "jsonrpc" || got["rpc.method"] != "_OTHER" || got["rpc.method_original"] != "add" {
			t.Errorf("%v span %q: %v, want name jsonrpc, rpc.method _OTHER, rpc.method_original add", s.SpanKind(), s.Name(), got)
		}
	}
}

// TestErrorStatus: a JSON-RPC error sets the span status to Error, and
// rpc.response.status_code and error.type to its code as a string, on both sides: a
// code the handler chose, a plain error (Internal error to the client) and
// a method the server does not have.
func TestErrorStatus(t *testing.T) {
	cases := []struct {
		method string
		params any
		code   string
	}{
		{"fail", map[string]string{"kind": "invalid"}, "-32602"},
		{"fail", map[string]string{"kind": "plain"}, "-32603"},
		{"nosuch", nil, "-32601"},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			r := newRig(t)
			client, _, _ := r.pair(t, otel.Options{Methods: []string{c.method}}, jsonrpc.Options{})
			err := client.Call(context.Background(), c.method, c.params, nil)
			var e *jsonrpc.Error
			if !errors.As(err, &e) {
				t.Fatalf("call: %v, want a *jsonrpc.Error", err)
			}
			for _, s := range r.waitSpans(t, 2) {
				got := attrs(s.Attributes())
				if got["rpc.response.status_code"] != c.code || got["error.type"] != c.code || s.Status().Code != codes.Error || s.Status().Description == "" {
					t.Errorf("%v span: %v, status %v; want rpc.response.status_code and error.type %s, status Error with a description", s.SpanKind(), got, s.Status(), c.code)
				}
			}
		})
	}
}

// TestNotificationSpans: a notification is a client span and a server
// span with no jsonrpc.request.id.
func TestNotificationSpans(t *testing.T) {
	r := newRig(t)
	client, _, notes := r.pair(t, otel.Options{Methods: []string{"note"}}, jsonrpc.Options{})
	if err := client.Notify(context.Background(), "note", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	<-notes
	spans := r.waitSpans(t, 2)
	for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		s := byKind(t, spans, kind)
		want := map[string]string{"rpc.system.name": "jsonrpc", "rpc.method": "note", "jsonrpc.protocol.version": "2.0"}
		if got := attrs(s.Attributes()); s.Name() != "note" || !maps.Equal(got, want) {
			t.Errorf("%v span %q: %v, want %v", kind, s.Name(), got, want)
		}
	}
}

// TestBatchElementSpans: each element of a batch, notification included,
// is a span of its own on both sides; a failing element's span alone has
// the error.
func TestBatchElementSpans(t *testing.T) {
	r := newRig(t)
	client, _, notes := r.pair(t, otel.Options{Methods: []string{"add", "fail", "note"}}, jsonrpc.Options{})
	var sum int
	elems := []jsonrpc.BatchElem{
		{Method: "add", Params: [2]int{1, 2}, Result: &sum},
		{Method: "fail", Params: map[string]string{"kind": "invalid"}},
		{Method: "note", Params: map[string]int{"n": 2}, Notification: true},
	}
	if err := client.Batch(context.Background(), elems); err != nil {
		t.Fatal(err)
	}
	<-notes
	spans := r.waitSpans(t, 6)
	count := map[string]int{}
	for _, s := range spans {
		got := attrs(s.Attributes())
		count[s.SpanKind().String()+" "+s.Name()]++
		wantErr := s.Name() == "fail"
		if (s.Status().Code == codes.Error) != wantErr || wantErr && got["rpc.response.status_code"] != "-32602" {
			t.Errorf("%v span %q: %v, status %v", s.SpanKind(), s.Name(), got, s.Status())
		}
		if _, hasID := got["jsonrpc.request.id"]; hasID == (s.Name() == "note") {
			t.Errorf("%v span %q: jsonrpc.request.id present %v", s.SpanKind(), s.Name(), hasID)
		}
	}
	want := map[string]int{"client add": 1, "client fail": 1, "client note": 1, "server add": 1, "server fail": 1, "server note": 1}
	if !maps.Equal(count, want) {
		t.Errorf("spans %v, want %v", count, want)
	}
}

// TestCancelledCallSpans: a call its caller gives up on ends its client
// span with error.type context.Canceled and no status code; the server,
// told by MCP's cancel notification, ends its span with the code the Peer
// answers a cancelled handler with (-32800).
func TestCancelledCallSpans(t *testing.T) {
	r := newRig(t)
	client, _, notes := r.pair(t, otel.Options{Methods: []string{"block"}}, jsonrpc.Options{Cancel: jsonrpc.MCPCancel})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- client.Call(ctx, "block", nil, nil) }()
	<-notes // the handler runs
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v, want context.Canceled", err)
	}
	spans := r.waitSpans(t, 2)
	c := attrs(byKind(t, spans, trace.SpanKindClient).Attributes())
	if c["error.type"] != "context.Canceled" || c["rpc.response.status_code"] != "" {
		t.Errorf("client span: %v, want error.type context.Canceled and no rpc.response.status_code", c)
	}
	s := attrs(byKind(t, spans, trace.SpanKindServer).Attributes())
	if s["error.type"] != "-32800" || s["rpc.response.status_code"] != "-32800" {
		t.Errorf("server span: %v, want error.type and rpc.response.status_code -32800", s)
	}
}
