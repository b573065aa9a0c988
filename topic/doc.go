// Package topic gives broadcasts a position, so that a client that drops
// and comes back gets exactly what it missed, or is told plainly that it
// cannot: topics with history and catch-up, over any JSON-RPC connection.
//
// A topic is a named stream of messages. Every message published on it has
// a Position: the epoch of the topic's history (random per log, so a
// restarted server gives a new one) and a seq, 1 for the first message of
// the epoch and one more for each. The server keeps a bounded history per
// topic (Memory: 1 MiB and 5 minutes by default; the cluster module keeps
// it in JetStream). A client subscribes with the position it has; the
// reply carries the messages after it if the history still reaches back
// that far (recovered true), or says recovered false, and the client
// fetches its state again.
//
// Server:
//
//	hub := &topic.Hub{Allow: mayFollow} // in-memory history; Allow decides who may follow what
//	mux := jsonrpc.NewMux()
//	hub.Register(mux) // topic.subscribe, topic.unsubscribe
//	http.Handle("/rpc", &ws.Server{Peer: jsonrpc.Options{Handler: mux}})
//	pos, err := hub.Publish(ctx, "board", note) // to every subscriber, and into the history
//
// Client (a ws.Client reconnects; the Follower re-subscribes with its
// positions on every connection):
//
//	f := &topic.Follower{OnMessage: apply, OnReset: refetch}
//	mux := jsonrpc.NewMux()
//	f.Register(mux) // topic.message, topic.kicked: on the Mux that serves the connection, or Subscribe fails (ErrNotRegistered)
//	c := ws.NewClient(url, ws.ClientOptions{Peer: jsonrpc.Options{Handler: mux}, OnConnect: f.Resubscribe})
//	p, err := c.Peer(ctx)
//	err = f.Subscribe(ctx, p, "board")
//
// # Secure and bounded by default
//
// A Hub with no Allow refuses every topic.subscribe (CodeNoSuchTopic):
// which topics a connection may read is the application's decision (a
// user's own topic, a room it belongs to), and a default that served any
// name would let any page read every other user's topics. Set Allow to
// decide per connection (its ctx carries the Peer and, behind ws.Server,
// the upgrade request's values), or to AllowAll when every topic is
// public. Whatever Allow says, a client cannot make the Hub hold more than
// the bounds allow: topic names of at most MaxNameBytes (256 bytes), at
// most MaxConnTopics (128) topics per connection and MaxTopics (10,000)
// open in all, and subscribe replies of at most MaxReplyBytes (64 KiB) of
// messages (and MaxReplyMessages, 1,000), a longer catch-up coming in
// pages the client asks for one after the other; a reply carries at least
// one message, however large, so the replies one connection has built and
// not yet queued for writing are bounded too (MaxConnReplyBytes, 1 MiB,
// counted before they are built; a subscribe beyond it waits). A topic nobody follows
// is released a minute after its last follower left once its history is
// empty, by one timer per Hub, and a Memory history ages out on time
// (MaxAge), so nothing a client opened outlives it for long.
//
// # The protocol
//
// Calls from the client: topic.subscribe with SubscribeParams
// {"topic", "since": {"epoch", "seq"}, "history": N} ("since" and
// "history" optional), whose result is
// a SubscribeResult {"topic", "epoch", "seq", "recovered", "messages":
// [{"seq", "data"}], "more"}; topic.unsubscribe with {"topic"}, whose
// result is true. Notifications from the server: topic.message with a
// Message {"topic", "epoch", "seq", "data"}; topic.kicked with
// KickedParams {"topic", "reason"}. Errors: -32602 for malformed
// params or a name too long, CodeNoSuchTopic (-32001, "no such topic")
// for a topic the Hub does not allow, CodeTooManyTopics (-32004) past
// MaxConnTopics, -32000 when MaxTopics are open, -32603 when the history
// cannot be read (the last two: try again later).
//
// History on a first subscription: with "history": N and no "since", or a
// "since" the history cannot recover (another epoch, or older than what is
// kept), the reply has recovered false and its "messages" are the topic's
// newest, at most N and what one reply may carry (MaxReplyMessages,
// MaxReplyBytes; the newest one whatever its size), with no gap, the last
// at "seq"; the client counts them to learn that it got fewer than N (the
// history held fewer, or the bounds cut the oldest). A "since" that is
// recovered gets what follows it, and "history" is not used. The client
// resets its state to the position before the first of them, applies
// them, then the live ones as usual: the backlog and the live messages
// come through one subscription, with no race between a fetch and them
// (TestSubscribeHistory, TestSubscribeHistoryBounded,
// TestFollowerHistory). Follower.History asks for it; Hub.History reads
// a topic's last messages on the server.
//
// The server adds the subscriber before it reads the history for the
// reply, so a live message may arrive before the reply, and every message
// after the topic's last at that read arrives live. A reply with "more":
// true carries the first of the messages after since, and its seq is the
// last of them: the client applies them and subscribes again with since
// at that seq for the next page (a client that ignores "more" sees a gap
// at the next live message, and asks then). The client keeps a position
// per topic, applies the reply's messages after it, then the live ones,
// dropping a seq it has seen, holding those that come while a subscribe
// is in flight, and subscribing again (with since) on a gap, or without
// since when the epoch changes. Calls on one connection run concurrently:
// a client sends a topic's subscribe after its unsubscribe's reply. An
// unsubscribe that reaches the server while a subscribe of the same topic
// on the same connection is in progress answers true and takes effect once
// that subscribe ends (the subscribe replies as it would have), unless
// another subscribe of the topic reached the server after it: so a client
// may unsubscribe from a topic whose subscribe it gave up (a timeout, a
// cancelled ctx) without waiting for the reply it will not get. Follower
// does all of this.
//
// The server may remove a subscriber from a topic without ending its
// connection (Hub.Kick, Hub.KickIdentity for all of a user's connections
// by Hub.Identity): it sends topic.kicked {"topic", "reason"}, and the
// client stops following the topic and does not subscribe to it again by
// itself (TestHubKick, TestHubKickIdentity). A later subscribe is refused
// if Allow refuses it: revoke there first.
//
// # Presence
//
// On the topics Hub.Presence turns it on for (none by default), the Hub
// tracks who follows them by Hub.Identity, the user the server signed in
// (never a name the client sends): a user with three connections is
// present once, and leaves when the last one goes. The topic's
// subscribers get topic.presence PresenceParams {"topic", "joined",
// "left", "count", "more", "version"}: the net changes of a window
// (Hub.PresenceWindow, 250 ms), each list at most Hub.MaxPresence (100)
// long, so that a client reconnecting in a loop costs the others at most
// one notification per window (TestPresenceFlappingBounded). A subscriber
// asks topic.members with MembersParams {"topic"} for a MembersResult
// {"topic", "members", "count", "more", "version"}, capped the same way
// (TestPresenceMembersBounded); others get CodeNoSuchTopic. The server
// reads Hub.Present; Follower.OnPresence and Follower.Members are the Go
// client's. A PresenceStore keeps who is present: MemoryPresence by
// default; Hubs that share one share presence (TestPresenceAcrossHubs).
// A Hub with Presence and no Identity is a configuration error: Register
// panics, and a subscribe to such a topic is refused
// (TestPresenceNeedsIdentity).
//
// A subscriber whose queue is full (Hub.MaxQueue) is dropped as a
// jsonrpc.Group drops a member: its connection ends with a cause wrapping
// jsonrpc.ErrSlowConsumer. When it comes back with its position, it
// recovers from the history what it missed, if the history still holds it.
//
// # Tracing
//
// Hub.Hook (a Hook; the otel module's Telemetry.TopicHook) sees each
// publish and each delivery to this process's subscribers, and may add to
// the topic.message params, marshalled once per delivery
// (TestHubHookDeliveryHasPublishContext). A Store that is a ContextStore
// (Memory, the cluster module's HistoryStore) delivers each message with
// its publish's context, on every node for a shared one; another Store's
// deliveries get context.Background() (TestHubHookStoreWithoutContext).
package topic
