package otel_test

import (
	"context"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/otel"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkW1 is bench/'s W1 (one call at a time over an in-memory pipe,
// a small params and result), both sides alike: without the module
// (otel=none); with it on no-op providers (noop: its Interceptor is nil);
// on no-op providers with MCPTraceContext (noop-tc: the Interceptor runs
// and records nothing); on the global providers with no SDK installed
// (global); and with the SDK sampling every call and aggregating the
// durations (sdk; spans go to no exporter). The key=value names let
// benchstat put them side by side (-col /otel), as bench/run.sh does.
func BenchmarkW1(b *testing.B) {
	sdkTP := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	sdkMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer sdkTP.Shutdown(context.Background())
	defer sdkMP.Shutdown(context.Background())
	cases := []struct {
		name string
		opts *otel.Options
	}{
		{"otel=none", nil},
		{"otel=noop", &otel.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: noop.NewMeterProvider(), Methods: []string{"add"}}},
		{"otel=noop-tc", &otel.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: noop.NewMeterProvider(), Methods: []string{"add"}, TraceContext: otel.MCPTraceContext}},
		{"otel=global", &otel.Options{Methods: []string{"add"}}},
		{"otel=sdk", &otel.Options{TracerProvider: sdkTP, MeterProvider: sdkMP, Methods: []string{"add"}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var co, so jsonrpc.Options
			if c.opts != nil {
				ct, err := otel.New(*c.opts)
				if err != nil {
					b.Fatal(err)
				}
				st, err := otel.New(*c.opts)
				if err != nil {
					b.Fatal(err)
				}
				co.Interceptors = []jsonrpc.Interceptor{ct.Interceptor()}
				so.Interceptors = []jsonrpc.Interceptor{st.Interceptor()}
			}
			so.Handler = testMux(nil)
			x, y := jsonrpc.Pipe()
			client, server := jsonrpc.NewPeer(x, co), jsonrpc.NewPeer(y, so)
			defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
			ctx := context.Background()
			var sum int
			b.ReportAllocs()
			for b.Loop() {
				if err := client.Call(ctx, "add", [2]int{1, 2}, &sum); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
