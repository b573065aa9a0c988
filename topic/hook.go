package topic

import (
	"context"
	"encoding/json"
)

// A Hook sees the messages of a Hub's topics as they are published and as
// they are delivered to this process's subscribers: the otel module's
// Telemetry.TopicHook makes them messaging spans, and puts the delivery's
// trace context in the params of topic.message. The core and this package
// know nothing of tracing; a Hub without a Hook (Hub.Hook nil) calls
// nothing and allocates nothing more.
//
// Its methods are called concurrently, for any topics; they must not
// block.
type Hook interface {
	// Publish is called as Hub.Publish begins, with its ctx and topic.
	// The ctx it returns is the one the Store's Append gets (a shared
	// Store carries what it holds to the other nodes: see ContextStore);
	// done is called once, with Append's outcome.
	Publish(ctx context.Context, topic string) (_ context.Context, done func(Position, error))

	// Deliver is called once per message the topic's log delivers, before
	// it goes to this process's subscribers, with the context the log
	// delivered it with (see ContextStore: the publisher's, for Memory and
	// the cluster module's HistoryStore; else context.Background()) and
	// params, the topic.message params marshalled once for every
	// subscriber. It returns the params to send (params itself, or a copy
	// with something added: the hook must not change params in place),
	// and done, called once the notification is queued for every
	// subscriber.
	Deliver(ctx context.Context, topic string, pos Position, params json.RawMessage) (_ json.RawMessage, done func())
}

// A ContextStore is a Store whose logs deliver each message with a
// context: the ctx its Append was given, or, for a store shared by
// several processes, one that holds what that ctx's Hub.Hook put in it
// (the cluster module's HistoryStore carries the trace context in the
// stream message's headers). A Hub with a Hook opens its topics with
// OpenContext when its Store has it; Memory and the cluster module's
// HistoryStore do.
type ContextStore interface {
	Store
	// OpenContext is Open with a deliver that takes the message's context.
	OpenContext(ctx context.Context, name string, deliver func(context.Context, Position, json.RawMessage)) (Log, error)
}
