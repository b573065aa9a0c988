package otel

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Options configure the telemetry of New. The zero value works: the global
// providers, every method recorded as _OTHER, no trace context on the wire.
type Options struct {
	// TracerProvider makes the spans. Default: the global one
	// (go.opentelemetry.io/otel.GetTracerProvider), a no-op until the
	// application installs an SDK.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics. Default: the global one
	// (go.opentelemetry.io/otel.GetMeterProvider).
	MeterProvider metric.MeterProvider
	// Methods are the method names recorded as rpc.method and used as span
	// names. JSON-RPC method names are chosen by the remote side, so any
	// other method is recorded as "_OTHER", its name kept in the span
	// attribute rpc.method_original (never in a metric). Default: none.
	Methods []string
	// Codes are the application's own JSON-RPC error codes that metrics
	// record as they are. The remote side chooses the code it answers
	// with (and a served call that forwards one answers with it), so in
	// rpc.client.call.duration and rpc.server.call.duration error.type and
	// rpc.response.status_code are the code only when it is one of
	// JSON-RPC 2.0's (-32700, -32600 to -32603), one the jsonrpc library
	// answers with of its own (-32000, -32003, -32800), or listed here;
	// any other is "_OTHER". Spans keep the code as it is. Default: none.
	Codes []int64
	// Topics are the topic names put in the names of messaging spans
	// ("publish board"), as the conventions ask for a destination of few
	// values; any other topic's spans are named by their operation alone
	// ("publish"), its name kept in messaging.destination.name. Default:
	// none.
	Topics []string
	// TraceContext carries the W3C trace context of calls and
	// notifications in their params, and takes it from those served as
	// their parent; a tracestate over 512 bytes is not taken. Default:
	// nil, nothing added to params or taken from them. MCPTraceContext is
	// MCP's (params._meta, SEP-414).
	TraceContext *TraceContextDialect
	// RemoteParent makes the trace context a served call or notification
	// carries (TraceContext) the parent of its SERVER span: the span joins
	// the caller's trace, and the caller's sampled flag decides whether it
	// is recorded (the SDK's default sampler, ParentBased, follows it).
	// Default: false, the remote side trusted with neither: the SERVER span
	// starts a trace of its own, linked to the caller's span, and this
	// side's sampler decides (TestForgedTraceparentCannotForceSampling). Set
	// it when the callers are your own programs or pages, which you want in
	// one trace with the server (the realtime demo does); leave it unset on
	// an endpoint that anyone can call.
	RemoteParent bool
	// ServerAddress and ServerPort, for a Peer that dialled a server, name
	// the address it dialled (server.address, server.port on its client
	// spans). Default: unset; a served side never sets them from the
	// connection, as the conventions ask.
	ServerAddress string
	ServerPort    int
}

// A TraceContextDialect says where a call's trace context travels.
type TraceContextDialect struct {
	// Member is the params member, an object, that holds the propagator's
	// fields ("traceparent", "tracestate"). Params that are not a JSON
	// object (an array) carry no trace context.
	Member string
	// Propagator writes and reads the fields. Default: W3C Trace Context
	// (propagation.TraceContext).
	Propagator propagation.TextMapPropagator
}

// MCPTraceContext is the Model Context Protocol's trace context, as SEP-414
// specifies: "traceparent" and "tracestate" in params._meta.
var MCPTraceContext = &TraceContextDialect{Member: "_meta"}
