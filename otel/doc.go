// Package otel records the calls and notifications of jsonrpc Peers as
// OpenTelemetry spans and metrics, carries trace context across the wire,
// and puts trace ids on slog records. It is a module of its own, so that
// the core library keeps no OpenTelemetry dependency.
//
//	tel, err := otel.New(otel.Options{Methods: []string{"add", "sub"}})
//	...
//	p := jsonrpc.NewPeer(conn, jsonrpc.Options{
//		Handler:      mux,
//		Interceptors: []jsonrpc.Interceptor{tel.Interceptor()},
//	})
//
// # Conventions
//
// Names and values follow the OpenTelemetry semantic conventions v1.44.0:
// RPC spans and metrics (docs/rpc/rpc-spans.md, rpc-metrics.md; release
// candidate) and their JSON-RPC page (docs/rpc/json-rpc.md; development).
// Every span and metric point has rpc.system.name "jsonrpc".
//
//   - A call or notification this Peer sends is a CLIENT span, one it serves
//     a SERVER span; each element of a batch is a span of its own.
//   - rpc.method is the method when Options.Methods lists it, else
//     "_OTHER", with the method in rpc.method_original (spans only). The
//     span's name is the method when it is listed, else "jsonrpc".
//   - jsonrpc.protocol.version is "2.0"; jsonrpc.request.id is the id's
//     text (a string id without its quotes), absent for a notification.
//   - The remote side chooses a method's name, an id and an error's text:
//     rpc.method_original and jsonrpc.request.id keep at most 256 bytes,
//     the status description at most 1 KiB (1024 bytes), each cut at a
//     UTF-8 boundary and ended with "...[cut]", counted in the cap
//     (TestServerSpanAttributesBoundedAgainstHostileMethodAndID,
//     TestClientSpanStatusBoundedAgainstRemoteError).
//   - server.address and server.port, on client spans, are
//     Options.ServerAddress and Options.ServerPort.
//   - network.peer.address and network.peer.port, on client and server
//     spans, are the other side's address as the Peer's Conn reports it
//     (jsonrpc.Peer.RemoteAddr: ws both ways, httprpc's servers, stdio
//     over a net.Conn); absent when it does not know it (a Pipe, stdio
//     over pipes, httprpc's clients, whose calls go over pooled
//     connections). Made once per Peer.
//   - On failure the span's status is Error with the error's text, and
//     error.type is set: the JSON-RPC error code as a string ("-32601")
//     when there is one, which is also rpc.response.status_code; else one of
//     "context.Canceled", "context.DeadlineExceeded", "jsonrpc.ErrClosed",
//     "jsonrpc.ErrOverloaded", "jsonrpc.ErrTooManyPending",
//     "jsonrpc.ErrSlowConsumer", "jsonrpc.ErrWriteTimeout",
//     "jsonrpc.ErrMessageTooLarge", "jsonrpc.ErrInvalidParams",
//     "jsonrpc.ErrInvalidResponse", or "_OTHER". A served call's code is
//     the one jsonrpc.DefaultMapError gives its handler's error (a Peer's
//     own Options.MapError is not seen by an interceptor).
//   - rpc.client.call.duration and rpc.server.call.duration are histograms
//     in seconds, with the bucket boundaries the conventions advise, over
//     rpc.system.name, rpc.method, and error.type and rpc.response.status_code on
//     failure. A notification's client duration is the time to queue it.
//     The remote side chooses the error codes it answers with, so a metric
//     point's error.type and rpc.response.status_code are the code only
//     when it is JSON-RPC 2.0's (-32700, -32600 to -32603), one the jsonrpc
//     library answers with of its own (-32000, -32003, -32800) or one of
//     Options.Codes, else "_OTHER"; spans keep the code as it is
//     (TestClientDurationErrorTypeBoundedAgainstRemoteCodes,
//     TestServerDurationErrorTypeBoundedAgainstForwardedCodes).
//
// # State metrics
//
// Observe (a Peer's queues, handlers, pending calls and push-back, and
// peerwire.jsonrpc.slow_consumers when it ends with
// jsonrpc.ErrSlowConsumer), ObserveSessions (peerwire.jsonrpc.sessions),
// ObserveTopics (peerwire.jsonrpc.topics), ObserveWebSockets
// (peerwire.jsonrpc.websocket.connections) and CountReconnects
// (peerwire.jsonrpc.reconnect.attempts) add the library's own state to the
// metrics, each point with rpc.system.name "jsonrpc".
//
// # Trace context on the wire
//
// Options.TraceContext is off by default. MCPTraceContext carries the W3C
// traceparent and tracestate in params._meta, as MCP's SEP-414 specifies:
// put into the params of every call and notification sent (merged with
// what _meta holds; a call sent without params gets params holding only
// _meta), and read from those served before the handler runs. The params
// are not changed: handlers see _meta, so their params types must take
// unknown members (a struct does; a map[string]int does not). Params that
// are an array carry none (TestTraceContextArrayParams): use objects when
// traces should cross the wire.
//
// Whom to trust with a trace: by default a served call's trace context is
// a link of its SERVER span, which starts a trace of its own, so that a
// caller can neither put the server's spans in a trace it chose nor decide
// their sampling (TestTraceContextUntrustedByDefault,
// TestForgedTraceparentCannotForceSampling). Options.RemoteParent makes it
// the parent instead: one trace across the wire, for callers that are your
// own programs and pages. A Telemetry on the caller's side needs neither.
//
// A CLIENT span covers a call from the moment its params are marshalled: a
// call whose params cannot be marshalled fails before the interceptors run
// and has none.
//
// # Topics and nodes
//
// TopicHook (for topic.Hub.Hook) and ClusterHook (for the cluster
// module's Options.Hook and HistoryOptions.Hook) follow the messaging
// spans of the same conventions v1.44.0 (docs/messaging/messaging-spans.md
// and the messaging attribute registry; development):
//
//   - A publish (topic.Hub.Publish, cluster.Topic.NotifyContext) is a
//     PRODUCER span "publish {topic}", operation type "send", name
//     "publish": a single message sent, so the send span's context is the
//     message's creation context, and no "create" span is made.
//   - Its delivery to one process's subscribers (or a node's members) is a
//     CONSUMER span "process {topic}", operation type and name "process",
//     one per message and process, whatever the number of subscribers.
//     Its parent is the creation context, which the conventions allow for
//     a single message pushed to the consumer, and which puts every
//     delivery, on every node, in the publish's trace; it also links to
//     it, as they ask of every process span. The delivery runs in no other
//     span (the log's or NATS's goroutine), so no ambient context is lost.
//   - messaging.destination.name is the topic's name; {topic} is in the
//     span's name only for the topics of Options.Topics (a name may be per
//     user: the conventions ask for a destination of few values there),
//     else the name is the operation alone. messaging.message.id is the
//     message's position, "{epoch}:{seq}".
//   - messaging.system is "peerwire.topic" (SystemTopic) for a topic.Hub
//     and "peerwire.cluster" (SystemCluster) for a cluster.Topic: none of
//     the conventions' well-known values applies (a Hub's history may be
//     in the process, in topic.Memory; NATS is not on the list, and the
//     spans describe this library's API, not a NATS client's), and a
//     custom value is allowed.
//   - A cluster.Node.Call or Notify that crosses NATS is an RPC CLIENT
//     span, and its serving on the other node a SERVER span (request and
//     reply: RPC, not messaging), child of it, in which the holder's
//     Peer.Call runs: with the Interceptor on that Peer, the call to the
//     page is a CLIENT span below it, and with MCPTraceContext the page
//     gets its traceparent in params._meta.
//
// Across NATS the trace context goes in each message's headers:
// "traceparent" and "tracestate" (W3C Trace Context, or
// Options.TraceContext's Propagator), for broadcasts, calls, notifications
// and the JetStream messages of the cluster module's HistoryStore, read
// back on the node that delivers them. A tracestate of more than 512
// bytes that the remote side sends (in a served call's params, a
// message's headers) is dropped whole as it is read, its traceparent
// kept: W3C Trace Context allows dropping entries, and a client's bytes
// would otherwise go on to every subscriber of what its call publishes
// (TestRemoteTraceStateNotRelayedToSubscribers,
// TestClusterHookDropsLongTraceState). With Options.TraceContext set, the
// notifications a broadcast sends to Peers (topic.message, a cluster
// Group's) carry the delivery's trace context in their params, put there
// once per broadcast; without it, the params are left as they are.
//
// # Logs
//
// LogHandler wraps a slog.Handler so that records logged with a context
// that holds a span carry "trace_id" and "span_id". The jsonrpc library
// logs with the call's context where it has one (a handler's panic, inside
// the interceptors: the SERVER span's ids), so its own records to a
// Peer's Options.Logger carry them too.
package otel
