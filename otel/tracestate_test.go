package otel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc/otel"
	"go.opentelemetry.io/otel/trace"
)

// TestClusterHookDropsLongTraceState: a NATS message's tracestate over 512
// bytes is dropped whole as the ClusterHook reads it, its traceparent
// kept; one of 512 bytes or less is kept.
func TestClusterHookDropsLongTraceState(t *testing.T) {
	r := newRig(t)
	hook := r.telemetry(t, otel.Options{}).ClusterHook()
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	short := "k0=" + strings.Repeat("v", 256)
	long := short + ",k1=" + strings.Repeat("v", 256) + ",k2=" + strings.Repeat("v", 256) // valid: distinct keys
	for _, c := range []struct {
		state string
		want  int
	}{{short, len(short)}, {long, 0}} {
		header := map[string][]string{"traceparent": {parent}, "tracestate": {c.state}}
		ctx, end := hook.Start(context.Background(), "follow", "board", "", header)
		end(nil)
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsValid() || len(sc.TraceState().String()) != c.want {
			t.Errorf("a header tracestate of %d bytes: span context valid %v, tracestate of %d bytes; want valid, %d bytes",
				len(c.state), sc.IsValid(), len(sc.TraceState().String()), c.want)
		}
	}
}
