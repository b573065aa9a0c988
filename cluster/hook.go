package cluster

import (
	"context"
	"encoding/json"
)

// A Hook sees what a Node sends to and gets from the other nodes, with the
// NATS headers of each message, so that a trace goes across the NATS hop:
// the otel module's Telemetry.ClusterHook makes spans of them and carries
// the W3C trace context (traceparent, tracestate) in the headers. This
// module knows nothing of tracing, and a Hook's methods take only the
// standard library's types, so that the module implementing one need not
// import this one (nor NATS). A Node (Options.Hook) or HistoryStore
// (HistoryOptions.Hook) without a Hook calls nothing and allocates nothing
// more.
//
// Its methods are called concurrently; they must not block.
type Hook interface {
	// Start begins the operation op (one of the Op constants) on name,
	// the Topic's (or topic.Hub topic's) name or the name a Peer holds,
	// for method (empty for OpAppend and OpFollow), with the ctx of what
	// causes it. For what the node sends (OpPublish, OpCall, OpNotify,
	// OpAppend) header is the NATS message's, which Start may add to (the
	// trace context of the ctx it returns); for what it gets (OpProcess,
	// OpServe, OpNotified, OpFollow) it is the message's to read: nil for
	// the delivery of a Publish to the publishing node's own members,
	// which never crossed NATS. The ctx returned is the one the operation
	// goes on with; end is called once, when it is over, with its error
	// (nil for none).
	Start(ctx context.Context, op, name, method string, header map[string][]string) (_ context.Context, end func(error))

	// Params returns the params of a notification that a Group sends to
	// this node's Peers, given ctx (Start's for it) and the params
	// marshalled once for every Peer (nil for none): params itself, or a
	// copy with something added (the trace context in params._meta); the
	// hook must not change params in place. It is called once per
	// broadcast, whatever the number of Peers.
	Params(ctx context.Context, params json.RawMessage) json.RawMessage
}

// The operations a Hook's Start begins.
const (
	// OpPublish is a Topic's Notify: a broadcast this node sends.
	OpPublish = "publish"
	// OpProcess is the delivery of a broadcast to this node's members of
	// a Topic: from another node (header: the message's), or the
	// publishing node's own (header nil).
	OpProcess = "process"
	// OpCall is a Node.Call that crosses NATS to another node.
	OpCall = "call"
	// OpServe is this node serving another node's Call: the ctx it
	// returns is the one the holder's Peer.Call gets.
	OpServe = "serve"
	// OpNotify is a Node.Notify to a name.
	OpNotify = "notify"
	// OpNotified is this node delivering another node's Notify to its
	// holders of the name.
	OpNotified = "notified"
	// OpAppend is a HistoryStore's Append of a message to a topic's
	// stream. topic.Hub's Hook spans the publish itself: a hook only
	// carries the context of ctx into header.
	OpAppend = "append"
	// OpFollow is a HistoryStore's delivery of a stream message, on any
	// node, to its topic.Hub: a hook only reads the context from header
	// into the ctx it returns, which the Hub's Hook gets
	// (topic.ContextStore).
	OpFollow = "follow"
)
