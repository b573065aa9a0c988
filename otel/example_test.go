package otel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/peerwire/jsonrpc"
	jotel "github.com/peerwire/jsonrpc/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

type addParams struct{ A, B int }

// Example: a client and a server, each with the SDK (here an in-memory
// exporter; in production an OTLP exporter, see the realtime demo), whose
// spans join into one trace because the client's trace context travels in
// params._meta and the server trusts its callers with it (RemoteParent).
// The package is imported as jotel: programs import go.opentelemetry.io/otel
// too. Params are an object (a struct): an array has no place for _meta.
func Example() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())

	tel, err := jotel.New(jotel.Options{
		TracerProvider: tp,
		Methods:        []string{"add"},
		TraceContext:   jotel.MCPTraceContext,
		RemoteParent:   true, // callers are our own: join their traces
	})
	if err != nil {
		log.Fatal(err)
	}
	defer tel.Close()
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "add", func(_ context.Context, p addParams) (int, error) { return p.A + p.B, nil })

	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: mux, Interceptors: []jsonrpc.Interceptor{tel.Interceptor()}})
	client := jsonrpc.NewPeer(a, jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{tel.Interceptor()}})
	var sum int
	if err := client.Call(context.Background(), "add", addParams{A: 2, B: 3}, &sum); err != nil {
		log.Fatal(err)
	}
	client.Close()
	server.Close()
	client.Wait()
	server.Wait()

	traces := map[trace.TraceID][]string{}
	for _, s := range spans.GetSpans() {
		traces[s.SpanContext.TraceID()] = append(traces[s.SpanContext.TraceID()], s.SpanKind.String())
	}
	fmt.Println("sum:", sum, "traces:", len(traces), "spans:", len(spans.GetSpans()))
	// Output: sum: 5 traces: 1 spans: 2
}
