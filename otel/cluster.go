package otel

import (
	"context"
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The operations of the cluster module's Hook (cluster.OpPublish and the
// others: the same strings, so that this module need not import it, nor
// NATS).
const (
	opPublish  = "publish"
	opProcess  = "process"
	opCall     = "call"
	opServe    = "serve"
	opNotify   = "notify"
	opNotified = "notified"
	opAppend   = "append"
	opFollow   = "follow"
)

// A ClusterHook is the hook of the cluster module (cluster.Options.Hook and
// cluster.HistoryOptions.Hook) that ClusterHook returns: it carries the
// W3C trace context across the NATS hop in each message's headers
// ("traceparent", "tracestate"), and records
//
//   - a cluster.Topic's broadcast as a PRODUCER span "publish" and its
//     delivery to each node's members as a CONSUMER span "process", child
//     of the publish and linked to it (messaging.system SystemCluster);
//   - a Node.Call or Node.Notify that crosses NATS as a CLIENT span, and
//     its serving on the other node as a SERVER span, child of it, in
//     which the holder's Peer.Call runs (RPC spans, as the Interceptor's);
//   - a HistoryStore's appends and deliveries as nothing of their own: the
//     TopicHook's spans cover them, and the trace context goes with the
//     stream message.
//
// With Options.TraceContext set, the notifications that the node's Groups
// send to its Peers carry the trace context in their params, put there
// once per broadcast. Its methods are safe for concurrent use.
type ClusterHook struct {
	t    *Telemetry
	m    messaging
	prop propagation.TextMapPropagator
}

// ClusterHook returns the hook for the cluster module's Options.Hook and
// HistoryOptions.Hook. The headers carry Options.TraceContext's
// Propagator's fields, W3C Trace Context's when it is nil.
func (t *Telemetry) ClusterHook() *ClusterHook {
	h := &ClusterHook{t: t, m: messaging{t: t, system: keyMsgSystem.String(SystemCluster)}, prop: propagation.TraceContext{}}
	if t.tc != nil && t.tc.Propagator != nil {
		h.prop = t.tc.Propagator
	}
	return h
}

// Start begins the operation op of the cluster module (cluster.OpPublish
// and the others) on name for method, as cluster.Hook documents: it writes
// the trace context into header for what the node sends, reads it from
// header for what it gets, and returns the span's ctx and its end.
func (h *ClusterHook) Start(ctx context.Context, op, name, method string, header map[string][]string) (context.Context, func(error)) {
	var span trace.Span
	switch op {
	case opAppend:
		h.prop.Inject(ctx, headerCarrier(header))
		return ctx, noEnd
	case opFollow:
		return h.extract(ctx, header), noEnd
	case opPublish:
		ctx, span = h.m.publish(ctx, name)
	case opProcess:
		ctx, span = h.m.process(h.extract(ctx, header), name)
	case opCall, opNotify:
		ctx, span = h.rpc(ctx, method, true)
	case opServe, opNotified:
		ctx, span = h.rpc(h.extract(ctx, header), method, false)
	default:
		return ctx, noEnd
	}
	if header != nil && (op == opPublish || op == opCall || op == opNotify) {
		h.prop.Inject(ctx, headerCarrier(header))
	}
	if op == opServe || op == opNotified {
		return ctx, func(err error) { endServed(span, err) }
	}
	return ctx, func(err error) { endWith(span, err) }
}

// Params returns params with the trace context of ctx in the member of
// Options.TraceContext (Telemetry.Inject): what a node's Group sends to
// its Peers.
func (h *ClusterHook) Params(ctx context.Context, params json.RawMessage) json.RawMessage {
	return h.t.Inject(ctx, params)
}

func noEnd(error) {}

// extract returns ctx with the remote span context header carries, if
// any.
func (h *ClusterHook) extract(ctx context.Context, header map[string][]string) context.Context {
	if header == nil {
		return ctx
	}
	return h.prop.Extract(ctx, headerCarrier(header))
}

// rpc starts the CLIENT (outbound) or SERVER span of a cross-node call or
// notification of method, with the attributes of the Interceptor's.
func (h *ClusterHook) rpc(ctx context.Context, method string, outbound bool) (context.Context, trace.Span) {
	m := h.t.methodOf(method)
	side := &m.server
	if outbound {
		side = &m.client
	}
	ctx, span := h.t.tracer.Start(ctx, m.spanName, side.start...)
	if span.IsRecording() {
		span.SetAttributes(attrVersion)
		if !m.known {
			span.SetAttributes(keyMethodOriginal.String(capped(method, maxAttrBytes)))
		}
	}
	return ctx, span
}

// endServed ends the SERVER span of a served call with the code its
// caller gets for err.
func endServed(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		code, kind := classify(err, false)
		span.SetAttributes(keyErrorType.String(kind), keyStatusCode.String(code))
		span.SetStatus(codes.Error, capped(err.Error(), maxStatusBytes))
	}
	span.End()
}

// headerCarrier is a propagation.TextMapCarrier over NATS (or HTTP)
// headers, map[string][]string: it sets the propagator's keys as they are
// ("traceparent"), and gets a key in any case, as HTTP and other NATS
// clients may have written it.
type headerCarrier map[string][]string

func (c headerCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return c.kept(key, v[0])
	}
	for k, v := range c {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return c.kept(key, v[0])
		}
	}
	return ""
}

// kept is v, or "" for a tracestate over maxTraceState (keepField).
func (headerCarrier) kept(key, v string) string {
	if keepField(key, v) {
		return v
	}
	return ""
}

func (c headerCarrier) Set(key, value string) { c[key] = []string{value} }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
