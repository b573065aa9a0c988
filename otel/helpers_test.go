package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// rig is a recorder and a metric reader with the SDK providers that feed
// them.
type rig struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = r.tp.Shutdown(context.Background())
		_ = r.mp.Shutdown(context.Background())
	})
	return r
}

// telemetry returns a Telemetry on the rig's providers, o's other fields
// kept.
func (r *rig) telemetry(t *testing.T, o otel.Options) *otel.Telemetry {
	t.Helper()
	o.TracerProvider, o.MeterProvider = r.tp, r.mp
	tel, err := otel.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return tel
}

// waitSpans waits (bounded: 10 s) until n spans have ended and returns them.
func (r *rig) waitSpans(t *testing.T, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.spans.Ended()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spans ended within 10 s, want %d: %v", len(got), n, names(got))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.SpanKind().String()+" "+s.Name())
	}
	return out
}

// attrs is a span's attributes as a map of their values' text.
func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// testMux serves "add" ([a, b] -> a+b), "fail" (the error params name),
// "block" (says so on notes, then waits until ctx ends), "echo" (its
// params) and the notification "note" (its params to notes).
func testMux(notes chan<- json.RawMessage) *jsonrpc.Mux {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "add", func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil })
	jsonrpc.Register(mux, "fail", func(_ context.Context, p struct{ Kind string }) (any, error) {
		if p.Kind == "invalid" {
			return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "no such kind", nil)
		}
		return nil, errors.New("plain failure")
	})
	mux.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		notes <- json.RawMessage(`"blocking"`)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	mux.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) { return r.Params, nil })
	mux.HandleFunc("note", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		notes <- append(json.RawMessage(nil), r.Params...)
		return nil, nil
	})
	return mux
}

// pair returns a client and a server Peer over jsonrpc.Pipe, each with its
// own Telemetry made from o on the rig; both are closed at cleanup.
func (r *rig) pair(t *testing.T, o otel.Options, extra jsonrpc.Options) (client, server *jsonrpc.Peer, notes chan json.RawMessage) {
	t.Helper()
	notes = make(chan json.RawMessage, 16)
	a, b := jsonrpc.Pipe()
	co, so := extra, extra
	co.Interceptors = []jsonrpc.Interceptor{r.telemetry(t, o).Interceptor()}
	so.Interceptors = []jsonrpc.Interceptor{r.telemetry(t, o).Interceptor()}
	so.Handler = testMux(notes)
	client, server = jsonrpc.NewPeer(a, co), jsonrpc.NewPeer(b, so)
	t.Cleanup(func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	})
	return client, server, notes
}
