package otel

import (
	"context"
	"fmt"
	"time"

	"github.com/peerwire/jsonrpc"
	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the spans and metrics.
const ScopeName = "github.com/peerwire/jsonrpc/otel"

// durationBuckets are the bucket boundaries, in seconds, the conventions
// advise for rpc.server.call.duration and rpc.client.call.duration.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Telemetry makes the spans and metrics of the Peers whose Options list its
// Interceptor. It is safe for concurrent use; one Telemetry may serve any
// number of Peers.
type Telemetry struct {
	tracer         trace.Tracer
	meter          metric.Meter
	methods        map[string]*methodOpts
	topics         map[string]struct{} // Options.Topics
	other          *methodOpts
	tc             *TraceContextDialect
	prop           propagation.TextMapPropagator
	serverAttrs    []attribute.KeyValue
	serverDuration metric.Float64Histogram
	clientDuration metric.Float64Histogram
	state          state
}

// New returns the telemetry opts configure (at most one Options; none
// gives the defaults). It fails if a metric instrument cannot be made or a
// TraceContextDialect names no member.
func New(opts ...Options) (*Telemetry, error) {
	if len(opts) > 1 {
		return nil, fmt.Errorf("otel: New takes at most one Options, got %d", len(opts))
	}
	var o Options
	if len(opts) == 1 {
		o = opts[0]
	}
	t := &Telemetry{methods: make(map[string]*methodOpts, len(o.Methods)), tc: o.TraceContext, other: newMethodOpts(other, false)}
	tp, mp := o.TracerProvider, o.MeterProvider
	if tp == nil {
		tp = otelapi.GetTracerProvider()
	}
	if mp == nil {
		mp = otelapi.GetMeterProvider()
	}
	t.tracer = tp.Tracer(ScopeName)
	t.meter = mp.Meter(ScopeName)
	t.topics = make(map[string]struct{}, len(o.Topics))
	for _, name := range o.Topics {
		t.topics[name] = struct{}{}
	}
	for _, m := range o.Methods {
		t.methods[m] = newMethodOpts(m, true)
	}
	if t.tc != nil {
		if t.tc.Member == "" {
			return nil, fmt.Errorf("otel: the TraceContextDialect names no params member: set Member (MCPTraceContext uses \"_meta\")")
		}
		t.prop = t.tc.Propagator
		if t.prop == nil {
			t.prop = propagation.TraceContext{}
		}
	}
	if o.ServerAddress != "" {
		t.serverAttrs = append(t.serverAttrs, keyServerAddress.String(o.ServerAddress))
		if o.ServerPort > 0 {
			t.serverAttrs = append(t.serverAttrs, keyServerPort.Int(o.ServerPort))
		}
	} else if o.ServerPort != 0 {
		return nil, fmt.Errorf("otel: ServerPort %d without a ServerAddress records nothing: set both", o.ServerPort)
	}
	var err error
	t.serverDuration, err = t.meter.Float64Histogram("rpc.server.call.duration",
		metric.WithUnit("s"), metric.WithDescription("Measures the duration of an incoming Remote Procedure Call (RPC)."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("otel: failed to make rpc.server.call.duration: %w", err)
	}
	t.clientDuration, err = t.meter.Float64Histogram("rpc.client.call.duration",
		metric.WithUnit("s"), metric.WithDescription("Measures the duration of an outgoing Remote Procedure Call (RPC)."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("otel: failed to make rpc.client.call.duration: %w", err)
	}
	if err := t.stateInstruments(); err != nil {
		return nil, err
	}
	return t, nil
}

// Interceptor returns the jsonrpc.Interceptor that records every call and
// notification a Peer sends (a CLIENT span, rpc.client.call.duration) and
// serves (a SERVER span, rpc.server.call.duration), the elements of
// batches included. Put it first in Options.Interceptors, so that the
// others run inside its span.
func (t *Telemetry) Interceptor() jsonrpc.Interceptor { return t.intercept }

func (t *Telemetry) intercept(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
	start := time.Now()
	m := t.methodOf(info.Method)
	side := &m.server
	if info.Outbound {
		side = &m.client
	} else if t.tc != nil {
		ctx = t.extract(ctx, info.Params)
	}
	ctx, span := t.tracer.Start(ctx, m.spanName, side.start...)
	recording := span.IsRecording()
	if recording {
		span.SetAttributes(attrVersion)
		if !m.known {
			span.SetAttributes(keyMethodOriginal.String(info.Method))
		}
		if !info.ID.IsZero() && !info.ID.IsNull() {
			span.SetAttributes(keyRequestID.String(requestID(info.ID)))
		}
		if info.Outbound && len(t.serverAttrs) > 0 {
			span.SetAttributes(t.serverAttrs...)
		}
	}
	if info.Outbound && t.tc != nil {
		info.Params = t.inject(ctx, info.Params)
	}
	result, err := next(ctx)
	h := t.serverDuration
	if info.Outbound {
		h = t.clientDuration
	}
	if err == nil {
		if h.Enabled(ctx) {
			h.Record(ctx, time.Since(start).Seconds(), side.ok)
		}
		span.End()
		return result, err
	}
	code, errType := classify(err, info.Outbound)
	errAttrs := []attribute.KeyValue{keyErrorType.String(errType)}
	if code != "" {
		errAttrs = append(errAttrs, keyStatusCode.String(code))
	}
	if h.Enabled(ctx) {
		h.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(append(errAttrs, attrSystem, keyMethod.String(m.name))...))
	}
	if recording {
		span.SetAttributes(errAttrs...)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return result, err
}

// methodOpts are what a method's spans and points start with, made once.
type methodOpts struct {
	name, spanName string
	known          bool // on the allow-list
	client, server sideOpts
}

type sideOpts struct {
	start []trace.SpanStartOption
	ok    metric.MeasurementOption // the point of a call that succeeded
}

func newMethodOpts(name string, known bool) *methodOpts {
	m := &methodOpts{name: name, spanName: name, known: known}
	if !known {
		m.spanName = "jsonrpc"
	}
	attrs := trace.WithAttributes(attrSystem, keyMethod.String(name))
	ok := metric.WithAttributeSet(attribute.NewSet(attrSystem, keyMethod.String(name)))
	m.client = sideOpts{start: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), attrs}, ok: ok}
	m.server = sideOpts{start: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), attrs}, ok: ok}
	return m
}

// methodOf returns the options of method: its own if it is on the
// allow-list, else those of _OTHER.
func (t *Telemetry) methodOf(method string) *methodOpts {
	if m, ok := t.methods[method]; ok {
		return m
	}
	return t.other
}

// requestID is the id as the conventions record it: a string id's text
// without its quotes, a number's digits.
func requestID(id jsonrpc.ID) string {
	s := id.String()
	if len(s) >= 2 && s[0] == '"' {
		var v string
		if err := jsonUnmarshal([]byte(s), &v); err == nil {
			return v
		}
	}
	return s
}
