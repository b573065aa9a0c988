package otel_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
	"github.com/peerwire/jsonrpc/otel"
	"github.com/peerwire/jsonrpc/stdio"
	"github.com/peerwire/jsonrpc/ws"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// transports start a server Peer with so and return a client Peer with co
// over one transport; the test's cleanup ends both.
var transports = []struct {
	name  string
	start func(t *testing.T, co, so jsonrpc.Options) *jsonrpc.Peer
}{
	{"Pipe", func(t *testing.T, co, so jsonrpc.Options) *jsonrpc.Peer {
		a, b := jsonrpc.Pipe()
		return both(t, jsonrpc.NewPeer(a, co), jsonrpc.NewPeer(b, so))
	}},
	{"stdio", func(t *testing.T, co, so jsonrpc.Options) *jsonrpc.Peer {
		r1, w1 := io.Pipe()
		r2, w2 := io.Pipe()
		return both(t, jsonrpc.NewPeer(stdio.NewConn(r1, w2), co), jsonrpc.NewPeer(stdio.NewConn(r2, w1), so))
	}},
	{"WebSocket", func(t *testing.T, co, so jsonrpc.Options) *jsonrpc.Peer {
		srv := &ws.Server{Peer: so}
		hs := httptest.NewServer(srv)
		t.Cleanup(func() { _ = srv.Shutdown(context.Background()); hs.Close() })
		p, err := ws.Dial(context.Background(), "ws"+strings.TrimPrefix(hs.URL, "http"), ws.DialOptions{Peer: co, HTTPClient: hs.Client()})
		if err != nil {
			t.Fatal(err)
		}
		return both(t, p, nil)
	}},
	{"HTTP session", func(t *testing.T, co, so jsonrpc.Options) *jsonrpc.Peer {
		srv := &httprpc.SessionServer{Peer: so, StartMethods: []string{"echo"}}
		hs := httptest.NewServer(srv)
		t.Cleanup(func() { _ = srv.Shutdown(context.Background()); hs.Close() })
		p, err := httprpc.Dial(context.Background(), hs.URL, httprpc.DialOptions{Peer: co, HTTPClient: hs.Client()})
		if err != nil {
			t.Fatal(err)
		}
		return both(t, p, nil)
	}},
}

func both(t *testing.T, client, server *jsonrpc.Peer) *jsonrpc.Peer {
	t.Cleanup(func() {
		client.Close()
		client.Wait()
		if server != nil {
			server.Close()
			server.Wait()
		}
	})
	return client
}

// TestTraceContextAcrossTransports: with MCPTraceContext, a call's and a
// notification's params carry traceparent in _meta (merged with what _meta
// held), and, with RemoteParent, the server's span is the child of the
// client's, over every transport.
func TestTraceContextAcrossTransports(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			r := newRig(t)
			o := otel.Options{Methods: []string{"echo", "note"}, TraceContext: otel.MCPTraceContext, RemoteParent: true}
			notes := make(chan json.RawMessage, 4)
			client := tr.start(t,
				jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{r.telemetry(t, o).Interceptor()}},
				jsonrpc.Options{Handler: testMux(notes), Interceptors: []jsonrpc.Interceptor{r.telemetry(t, o).Interceptor()}})
			ctx, root := r.tp.Tracer("test").Start(context.Background(), "root")
			var echoed struct {
				Meta map[string]any `json:"_meta"`
				X    int            `json:"x"`
			}
			if err := client.Call(ctx, "echo", json.RawMessage(`{"x":1,"_meta":{"progressToken":7}}`), &echoed); err != nil {
				t.Fatal(err)
			}
			if err := client.Notify(ctx, "note", map[string]int{"n": 1}); err != nil {
				t.Fatal(err)
			}
			var note struct {
				Meta map[string]string `json:"_meta"`
			}
			if err := json.Unmarshal(<-notes, &note); err != nil {
				t.Fatal(err)
			}
			root.End()
			tp, _ := echoed.Meta["traceparent"].(string)
			if echoed.X != 1 || echoed.Meta["progressToken"] != float64(7) || !strings.HasPrefix(tp, "00-"+root.SpanContext().TraceID().String()) {
				t.Errorf("params as served: %+v, want x 1, _meta.progressToken 7 and a traceparent of trace %s", echoed, root.SpanContext().TraceID())
			}
			if !strings.HasPrefix(note.Meta["traceparent"], "00-"+root.SpanContext().TraceID().String()) {
				t.Errorf("notification params as served: %+v, want a traceparent", note)
			}
			spans := r.waitSpans(t, 5)
			for _, method := range []string{"echo", "note"} {
				c, s := find(spans, method, trace.SpanKindClient), find(spans, method, trace.SpanKindServer)
				if c == nil || s == nil {
					t.Fatalf("%s: no client or server span: %v", method, names(spans))
				}
				if s.Parent().SpanID() != c.SpanContext().SpanID() || s.SpanContext().TraceID() != root.SpanContext().TraceID() || !s.Parent().IsRemote() {
					t.Errorf("%s: server span's parent %v, want the client span %v (remote), trace %s", method, s.Parent(), c.SpanContext(), root.SpanContext().TraceID())
				}
			}
		})
	}
}

// TestTraceContextOffByDefault: without a TraceContext the params reach
// the handler as they were sent, and the server's span starts a trace of
// its own.
func TestTraceContextOffByDefault(t *testing.T) {
	r := newRig(t)
	client, _, _ := r.pair(t, otel.Options{Methods: []string{"echo"}}, jsonrpc.Options{})
	ctx, root := r.tp.Tracer("test").Start(context.Background(), "root")
	var echoed json.RawMessage
	if err := client.Call(ctx, "echo", json.RawMessage(`{"x":1}`), &echoed); err != nil {
		t.Fatal(err)
	}
	root.End()
	if string(echoed) != `{"x":1}` {
		t.Errorf("params as served: %s, want them unchanged", echoed)
	}
	spans := r.waitSpans(t, 3)
	if s := find(spans, "echo", trace.SpanKindServer); s == nil || s.SpanContext().TraceID() == root.SpanContext().TraceID() {
		t.Errorf("server span in the caller's trace without a TraceContext: %v", names(spans))
	}
}

// TestTraceContextArrayParams: params that are an array carry no trace
// context and reach the handler unchanged.
func TestTraceContextArrayParams(t *testing.T) {
	r := newRig(t)
	client, _, _ := r.pair(t, otel.Options{Methods: []string{"echo"}, TraceContext: otel.MCPTraceContext}, jsonrpc.Options{})
	var echoed json.RawMessage
	if err := client.Call(context.Background(), "echo", []int{1, 2}, &echoed); err != nil {
		t.Fatal(err)
	}
	if string(echoed) != `[1,2]` {
		t.Errorf("params as served: %s, want [1,2]", echoed)
	}
}

// TestTraceContextNoParams: a call without params gets params holding only
// the member.
func TestTraceContextNoParams(t *testing.T) {
	r := newRig(t)
	client, _, _ := r.pair(t, otel.Options{Methods: []string{"echo"}, TraceContext: otel.MCPTraceContext}, jsonrpc.Options{})
	var echoed map[string]map[string]string
	if err := client.Call(context.Background(), "echo", nil, &echoed); err != nil {
		t.Fatal(err)
	}
	if len(echoed) != 1 || len(echoed["_meta"]["traceparent"]) != 55 {
		t.Errorf("params as served: %v, want only _meta with a traceparent", echoed)
	}
}

func find(spans []sdktrace.ReadOnlySpan, name string, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	for _, s := range spans {
		if s.Name() == name && s.SpanKind() == kind {
			return s
		}
	}
	return nil
}

// TestTraceContextUntrustedByDefault: without RemoteParent, a served call
// that carries a trace context starts a trace of its own, linked to the
// caller's span: the caller neither places the server's span in its trace
// nor decides its sampling. (On the module as first merged, the SERVER
// span was the CLIENT span's child whatever the caller was.)
func TestTraceContextUntrustedByDefault(t *testing.T) {
	r := newRig(t)
	client, _, _ := r.pair(t, otel.Options{Methods: []string{"echo"}, TraceContext: otel.MCPTraceContext}, jsonrpc.Options{})
	if err := client.Call(context.Background(), "echo", map[string]int{"a": 1}, nil); err != nil {
		t.Fatal(err)
	}
	cs := find(r.spans.Ended(), "echo", trace.SpanKindClient)
	var ss sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(5 * time.Second); ss == nil && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		ss = find(r.spans.Ended(), "echo", trace.SpanKindServer)
	}
	if cs == nil || ss == nil {
		t.Fatalf("spans: client %v, server %v", cs, ss)
	}
	if ss.SpanContext().TraceID() == cs.SpanContext().TraceID() || ss.Parent().IsValid() {
		t.Errorf("SERVER span in trace %s with parent %v: want a new trace, not the caller's %s",
			ss.SpanContext().TraceID(), ss.Parent().SpanID(), cs.SpanContext().TraceID())
	}
	links := ss.Links()
	if len(links) != 1 || links[0].SpanContext.SpanID() != cs.SpanContext().SpanID() {
		t.Errorf("SERVER span links %v, want one to the CLIENT span %s", links, cs.SpanContext().SpanID())
	}
}
