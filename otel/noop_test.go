package otel_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// noopOptions are the no-op providers of go.opentelemetry.io/otel.
func noopOptions() otel.Options {
	return otel.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider(), Methods: []string{"add"}}
}

// TestNoopInterceptorIsNil: with no-op providers and no trace context the
// Interceptor is nil, which jsonrpc.Options skips, so the Peer takes the
// path of one without the module; with a trace context (carried through
// even when nothing records), or the global providers (an SDK may be
// installed later), it is not.
func TestNoopInterceptorIsNil(t *testing.T) {
	tel, err := otel.New(noopOptions())
	if err != nil {
		t.Fatal(err)
	}
	if tel.Interceptor() != nil {
		t.Error("no-op providers, no trace context: the Interceptor is not nil")
	}
	o := noopOptions()
	o.TraceContext = otel.MCPTraceContext
	if tel, err = otel.New(o); err != nil {
		t.Fatal(err)
	}
	if tel.Interceptor() == nil {
		t.Error("no-op providers with a trace context: the Interceptor is nil")
	}
	if tel, err = otel.New(); err != nil {
		t.Fatal(err)
	}
	if tel.Interceptor() == nil {
		t.Error("the global providers: the Interceptor is nil")
	}
	// The nil Interceptor in a Peer's Options: calls go through.
	tel, _ = otel.New(noopOptions())
	a, b := jsonrpc.Pipe()
	opts := jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{tel.Interceptor()}}
	client := jsonrpc.NewPeer(a, opts)
	opts.Handler = testMux(nil)
	both(t, client, jsonrpc.NewPeer(b, opts))
	var sum int
	if err := client.Call(context.Background(), "add", []int{1, 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("add through a nil Interceptor: %d, %v", sum, err)
	}
}

// TestNoopAllocations: on no-op providers with MCPTraceContext on (so that
// the Interceptor exists), the Interceptor itself allocates nothing and
// leaves the params alone: no span is started, no clock read for a
// disabled histogram, no trace context marshalled without a valid span,
// no params decoded that hold no traceparent.
func TestNoopAllocations(t *testing.T) {
	o := noopOptions()
	o.TraceContext = otel.MCPTraceContext
	tel, err := otel.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ic := tel.Interceptor()
	params := json.RawMessage(`{"a":1,"b":2,"_meta":{"progressToken":7}}`)
	next := func(context.Context) (any, error) { return nil, nil }
	ctx := context.Background()
	for _, outbound := range []bool{true, false} {
		info := &jsonrpc.CallInfo{Outbound: outbound, Method: "add", ID: jsonrpc.Int64ID(1), Params: params}
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := ic(ctx, info, next); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("outbound %v: %v allocations a call, want 0", outbound, allocs)
		}
		if string(info.Params) != string(params) {
			t.Errorf("outbound %v: params became %s", outbound, info.Params)
		}
	}
}
