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
// what _meta holds), and taken out of those served, as the parent of their
// span, before the handler runs. Params that are an array carry none.
//
// # Logs
//
// LogHandler wraps a slog.Handler so that records logged with a context
// that holds a span carry "trace_id" and "span_id". The jsonrpc library
// logs with the call's context where it has one (a handler's panic, inside
// the interceptors: the SERVER span's ids), so its own records to a
// Peer's Options.Logger carry them too.
package otel
