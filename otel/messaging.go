package otel

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/peerwire/jsonrpc/topic"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Messaging spans: a topic's publish (a PRODUCER "send" span, whose
// context is the message's creation context) and its deliveries (a
// CONSUMER "process" span per message and process, the creation context
// its parent and its link). See the package doc.

// The messaging attribute keys and values of the conventions (see the
// package doc for their version).
const (
	keyMsgSystem      = attribute.Key("messaging.system")
	keyMsgDestination = attribute.Key("messaging.destination.name")
	keyMsgOpType      = attribute.Key("messaging.operation.type")
	keyMsgOpName      = attribute.Key("messaging.operation.name")
	keyMsgID          = attribute.Key("messaging.message.id")
)

// The messaging.system values: no value the conventions list applies (a
// topic.Hub's history may be in this process), so each names the layer
// whose API the spans describe.
const (
	// SystemTopic is the messaging.system of a topic.Hub's spans.
	SystemTopic = "peerwire.topic"
	// SystemCluster is the messaging.system of a cluster.Topic's spans.
	SystemCluster = "peerwire.cluster"
)

// messaging makes the messaging spans of one system.
type messaging struct {
	t      *Telemetry
	system attribute.KeyValue
}

// publish starts the PRODUCER span of a message sent to destination.
func (m messaging) publish(ctx context.Context, destination string) (context.Context, trace.Span) {
	return m.t.tracer.Start(ctx, m.t.spanName("publish", destination),
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(m.system, keyMsgDestination.String(destination),
			keyMsgOpType.String("send"), keyMsgOpName.String("publish")))
}

// process starts the CONSUMER span of a message of destination delivered
// to this process's subscribers. Its parent is the creation context ctx
// holds (a single message, pushed: the conventions allow it, and it puts
// the delivery in the publish's trace), which it links to as well.
func (m messaging) process(ctx context.Context, destination string) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(m.system, keyMsgDestination.String(destination),
			keyMsgOpType.String("process"), keyMsgOpName.String("process")),
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return m.t.tracer.Start(ctx, m.t.spanName("process", destination), opts...)
}

// spanName is "{operation} {destination}" for a destination on
// Options.Topics, else the operation alone: a topic's name may be as
// many as the users.
func (t *Telemetry) spanName(op, destination string) string {
	if _, ok := t.topics[destination]; ok {
		return op + " " + destination
	}
	return op
}

// endWith ends span with err's status and error.type, if err is not nil.
func endWith(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		_, kind := classify(err, true)
		span.SetAttributes(keyErrorType.String(kind))
		span.SetStatus(codes.Error, capped(err.Error(), maxStatusBytes))
	}
	span.End()
}

// messageID is a topic message's messaging.message.id: its position.
func messageID(pos topic.Position) attribute.KeyValue {
	return keyMsgID.String(pos.Epoch + ":" + strconv.FormatUint(pos.Seq, 10))
}

// TopicHook returns the topic.Hook (for topic.Hub.Hook) that records each
// publish as a PRODUCER span "publish" and each delivery to this
// process's subscribers as a CONSUMER span "process", whose parent is the
// publish's span, on this node or (through the cluster module's
// HistoryStore with ClusterHook) another; with Options.TraceContext set,
// the topic.message each subscriber gets carries the delivery span's
// trace context, put in the params once for all of them.
func (t *Telemetry) TopicHook() topic.Hook {
	return topicHook{messaging{t: t, system: keyMsgSystem.String(SystemTopic)}}
}

type topicHook struct{ m messaging }

func (h topicHook) Publish(ctx context.Context, name string) (context.Context, func(topic.Position, error)) {
	ctx, span := h.m.publish(ctx, name)
	return ctx, func(pos topic.Position, err error) {
		if err == nil && span.IsRecording() {
			span.SetAttributes(messageID(pos))
		}
		endWith(span, err)
	}
}

func (h topicHook) Deliver(ctx context.Context, name string, pos topic.Position, params json.RawMessage) (json.RawMessage, func()) {
	ctx, span := h.m.process(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(messageID(pos))
	}
	return h.m.t.Inject(ctx, params), func() { span.End() }
}

// Inject returns params with the trace context of ctx in the member of
// Options.TraceContext (params._meta for MCPTraceContext), merged with
// what it holds: for a notification marshalled once and sent to many
// Peers (a jsonrpc.Group's Notify), which passes through no interceptor.
// Params that are an array are returned as they are; so are all params
// when Options.TraceContext is nil, at no cost.
func (t *Telemetry) Inject(ctx context.Context, params json.RawMessage) json.RawMessage {
	if t.tc == nil {
		return params
	}
	return t.inject(ctx, params)
}
