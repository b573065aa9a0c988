package otel_test

import (
	"context"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TestClusterHookCallAcrossHeaders: a cross-node call's CLIENT span
// writes traceparent into the NATS headers (lower case, as other NATS
// clients read it), and the serving node's SERVER span, read from them,
// is its child; the served call's error is the SERVER span's status.
func TestClusterHookCallAcrossHeaders(t *testing.T) {
	r := newRig(t)
	node1 := r.telemetry(t, otel.Options{Methods: []string{"echo"}}).ClusterHook()
	node2 := r.telemetry(t, otel.Options{Methods: []string{"echo"}}).ClusterHook()
	header := map[string][]string{"Jsonrpc-Call-Id": {"n1.1"}}
	_, endCall := node1.Start(context.Background(), "call", "alice", "echo", header)
	if len(header["traceparent"]) != 1 {
		t.Fatalf("headers after a call's Start: %v, want a traceparent", header)
	}
	ctx, endServe := node2.Start(context.Background(), "serve", "alice", "echo", header)
	if !trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatal("the serving ctx holds no span")
	}
	endServe(jsonrpc.NewError(4001, "not allowed", nil))
	endCall(nil)
	spans := r.waitSpans(t, 2)
	client, server := find(spans, "echo", trace.SpanKindClient), find(spans, "echo", trace.SpanKindServer)
	if client == nil || server == nil {
		t.Fatalf("spans %v, want CLIENT echo and SERVER echo", names(spans))
	}
	if server.Parent().SpanID() != client.SpanContext().SpanID() || !server.Parent().IsRemote() {
		t.Errorf("SERVER span's parent %v, want the remote CLIENT span %v", server.Parent(), client.SpanContext())
	}
	a := attrs(server.Attributes())
	if server.Status().Code != codes.Error || a["rpc.response.status_code"] != "4001" || a["rpc.system.name"] != "jsonrpc" || a["rpc.method"] != "echo" {
		t.Errorf("SERVER span status %v, attributes %v; want Error, rpc.response.status_code 4001, jsonrpc, echo", server.Status(), a)
	}
}

// TestClusterHookBroadcastSpans: a cluster.Topic broadcast is a PRODUCER
// span with messaging.system peerwire.cluster, and its delivery on
// another node a CONSUMER span, child of it and linked to it.
func TestClusterHookBroadcastSpans(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{Topics: []string{"room"}})
	hook := tel.ClusterHook()
	header := map[string][]string{"Jsonrpc-Origin": {"n1"}}
	_, endPub := hook.Start(context.Background(), "publish", "room", "note", header)
	endPub(nil)
	_, endProc := hook.Start(context.Background(), "process", "room", "note", header)
	endProc(nil)
	spans := r.waitSpans(t, 2)
	pub, proc := find(spans, "publish room", trace.SpanKindProducer), find(spans, "process room", trace.SpanKindConsumer)
	if pub == nil || proc == nil {
		t.Fatalf("spans %v, want PRODUCER publish room and CONSUMER process room", names(spans))
	}
	if got := attrs(pub.Attributes()); got["messaging.system"] != "peerwire.cluster" || got["messaging.operation.type"] != "send" {
		t.Errorf("publish attributes %v", got)
	}
	if proc.Parent().SpanID() != pub.SpanContext().SpanID() || len(proc.Links()) != 1 {
		t.Errorf("process span's parent %v and links %v, want the publish span as both", proc.Parent(), proc.Links())
	}
}

// TestClusterHookHistoryCarriesOnly: a HistoryStore's append and follow
// carry the trace context through the headers and make no span; a
// header written by another client in another case is read.
func TestClusterHookHistoryCarriesOnly(t *testing.T) {
	r := newRig(t)
	hook := r.telemetry(t, otel.Options{}).ClusterHook()
	ctx, span := r.tp.Tracer("test").Start(context.Background(), "publish")
	header := map[string][]string{}
	_, end := hook.Start(ctx, "append", "board", "", header)
	end(nil)
	span.End()
	tp := header["traceparent"]
	if len(tp) != 1 {
		t.Fatalf("headers after append: %v, want a traceparent", header)
	}
	got, end := hook.Start(context.Background(), "follow", "board", "", map[string][]string{"Traceparent": tp})
	end(nil)
	if sc := trace.SpanContextFromContext(got); sc.SpanID() != span.SpanContext().SpanID() || !sc.IsRemote() {
		t.Errorf("follow's ctx holds %v, want the remote publish span %v", sc, span.SpanContext())
	}
	if spans := r.spans.Ended(); len(spans) != 1 {
		t.Errorf("spans %v, want only the test's own", names(spans))
	}
}

// TestClusterHookParamsFollowsTraceContext: Params adds the trace
// context to a Group's params only with Options.TraceContext set.
func TestClusterHookParamsFollowsTraceContext(t *testing.T) {
	r := newRig(t)
	ctx, span := r.tp.Tracer("test").Start(context.Background(), "x")
	defer span.End()
	off := r.telemetry(t, otel.Options{}).ClusterHook()
	if got := off.Params(ctx, []byte(`{"a":1}`)); string(got) != `{"a":1}` {
		t.Errorf("Params with TraceContext off: %s", got)
	}
	on := r.telemetry(t, otel.Options{TraceContext: otel.MCPTraceContext}).ClusterHook()
	want := `{"_meta":{"traceparent":"00-` + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + `-01"},"a":1}`
	if got := on.Params(ctx, []byte(`{"a":1}`)); string(got) != want {
		t.Errorf("Params with MCPTraceContext: %s, want %s", got, want)
	}
}
