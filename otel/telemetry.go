package otel

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/peerwire/jsonrpc"
	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
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
	tracing        bool // tracer is not a no-op one: its spans may record or carry a parent
	inert          bool // a no-op tracer, no-op histograms, no trace context: nothing to intercept
	meter          metric.Meter
	methods        map[string]*methodOpts
	topics         map[string]struct{} // Options.Topics
	codes          map[string]struct{} // the error codes metrics record as they are: knownCodes and Options.Codes, as text
	other          *methodOpts
	tc             *TraceContextDialect
	remoteParent   bool // Options.RemoteParent
	prop           propagation.TextMapPropagator
	w3c            bool // prop is the default W3C one, which needs a valid span context and a traceparent
	serverAttrs    []attribute.KeyValue
	serverDuration metric.Float64Histogram
	clientDuration metric.Float64Histogram
	state          state
	peers          peerAddrs
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
	t := &Telemetry{methods: make(map[string]*methodOpts, len(o.Methods)), tc: o.TraceContext, remoteParent: o.RemoteParent, other: newMethodOpts(other, false)}
	tp, mp := o.TracerProvider, o.MeterProvider
	if tp == nil {
		tp = otelapi.GetTracerProvider()
	}
	if mp == nil {
		mp = otelapi.GetMeterProvider()
	}
	t.tracer = tp.Tracer(ScopeName)
	_, noopTracer := t.tracer.(tracenoop.Tracer)
	t.tracing = !noopTracer
	t.meter = mp.Meter(ScopeName)
	t.topics = make(map[string]struct{}, len(o.Topics))
	for _, name := range o.Topics {
		t.topics[name] = struct{}{}
	}
	t.codes = make(map[string]struct{}, len(knownCodes)+len(o.Codes))
	for _, c := range append(knownCodes[:len(knownCodes):len(knownCodes)], o.Codes...) {
		t.codes[strconv.FormatInt(c, 10)] = struct{}{}
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
			t.prop, t.w3c = propagation.TraceContext{}, true
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
	_, noopServer := t.serverDuration.(metricnoop.Float64Histogram)
	_, noopClient := t.clientDuration.(metricnoop.Float64Histogram)
	t.inert = !t.tracing && noopServer && noopClient && t.tc == nil
	return t, nil
}

// Interceptor returns the jsonrpc.Interceptor that records every call and
// notification a Peer sends (a CLIENT span, rpc.client.call.duration) and
// serves (a SERVER span, rpc.server.call.duration), the elements of
// batches included. Put it first in Options.Interceptors, so that the
// others run inside its span.
//
// It is nil when the Telemetry can record nothing and carries nothing: a
// no-op TracerProvider and MeterProvider (go.opentelemetry.io/otel's
// trace/noop and metric/noop) and no TraceContext. jsonrpc.Options skips
// a nil Interceptor, so that such a Peer costs what one without the
// module does (TestNoopInterceptorIsNil). The global providers, which an
// SDK may replace at any time, always get an Interceptor.
func (t *Telemetry) Interceptor() jsonrpc.Interceptor {
	if t.inert {
		return nil
	}
	return t.intercept
}

func (t *Telemetry) intercept(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
	m := t.methodOf(info.Method)
	side, h := &m.server, t.serverDuration
	start := side.start
	if info.Outbound {
		side, h = &m.client, t.clientDuration
		start = side.start
	} else if t.tc != nil {
		ctx = t.extract(ctx, info.Params)
		if !t.remoteParent {
			start = untrusted(ctx, start)
		}
	}
	// Nothing below allocates, nor reads the clock, for what is not
	// recorded: no span with a no-op tracer, no time with a disabled
	// histogram (TestNoopAllocations).
	measure := h.Enabled(ctx)
	var began time.Time
	if measure {
		began = time.Now()
	}
	var span trace.Span
	recording := false
	if t.tracing {
		ctx, span = t.tracer.Start(ctx, m.spanName, start...)
		if recording = span.IsRecording(); recording {
			t.setAttributes(span, m, info)
		}
	}
	if info.Outbound && t.tc != nil {
		info.Params = t.inject(ctx, info.Params)
	}
	result, err := next(ctx)
	if err == nil {
		if measure {
			h.Record(ctx, time.Since(began).Seconds(), side.ok...)
		}
		if span != nil {
			span.End()
		}
		return result, err
	}
	if measure || recording {
		t.failed(ctx, span, recording, h, measure, began, m, info.Outbound, err)
	}
	if span != nil {
		span.End()
	}
	return result, err
}

// setAttributes sets the attributes of a recording span that are not
// among its start options.
func (t *Telemetry) setAttributes(span trace.Span, m *methodOpts, info *jsonrpc.CallInfo) {
	var buf [6]attribute.KeyValue
	attrs := append(buf[:0], attrVersion)
	attrs = append(attrs, t.peers.of(info.Peer)...)
	if !m.known {
		attrs = append(attrs, keyMethodOriginal.String(capped(info.Method, maxAttrBytes)))
	}
	if !info.ID.IsZero() && !info.ID.IsNull() {
		attrs = append(attrs, keyRequestID.String(capped(requestID(info.ID), maxAttrBytes)))
	}
	span.SetAttributes(attrs...)
	if info.Outbound && len(t.serverAttrs) > 0 {
		span.SetAttributes(t.serverAttrs...)
	}
}

// failed records a call that ended with err: its duration point (when
// measure) with error.type and rpc.response.status_code (a code outside
// Options.Codes and the known ones as "_OTHER"), and the span's status
// and attributes (when recording).
func (t *Telemetry) failed(ctx context.Context, span trace.Span, recording bool, h metric.Float64Histogram, measure bool, start time.Time, m *methodOpts, outbound bool, err error) {
	code, errType := classify(err, outbound)
	if measure {
		// The remote side chooses its codes: a metric takes only a
		// bounded set of them (Options.Codes).
		mcode := t.metricCode(code)
		mtype := errType
		if code != "" {
			mtype = mcode
		}
		attrs := []attribute.KeyValue{attrSystem, keyMethod.String(m.name), keyErrorType.String(mtype)}
		if mcode != "" {
			attrs = append(attrs, keyStatusCode.String(mcode))
		}
		h.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}
	if recording {
		span.SetAttributes(keyErrorType.String(errType))
		if code != "" {
			span.SetAttributes(keyStatusCode.String(code))
		}
		span.SetStatus(codes.Error, capped(err.Error(), maxStatusBytes))
	}
}

// methodOpts are what a method's spans and points start with, made once.
type methodOpts struct {
	name, spanName string
	known          bool // on the allow-list
	client, server sideOpts
}

type sideOpts struct {
	start []trace.SpanStartOption
	ok    []metric.RecordOption // the point of a call that succeeded, a slice made once
}

func newMethodOpts(name string, known bool) *methodOpts {
	m := &methodOpts{name: name, spanName: name, known: known}
	if !known {
		m.spanName = "jsonrpc"
	}
	attrs := trace.WithAttributes(attrSystem, keyMethod.String(name))
	ok := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrSystem, keyMethod.String(name)))}
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

// untrusted returns the start options of a SERVER span whose caller is not
// trusted with its parent (Options.RemoteParent unset): when ctx carries a
// remote span context, the span starts a new trace linked to it, so that
// the caller neither places it in a trace of its choosing nor decides its
// sampling. Without a remote span context it returns opts as they are.
func untrusted(ctx context.Context, opts []trace.SpanStartOption) []trace.SpanStartOption {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsRemote() {
		return opts
	}
	return append(opts[:len(opts):len(opts)], trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sc}))
}
