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
// reply carries every message after it if the history still reaches back
// that far (recovered true), or says recovered false, and the client
// fetches its state again.
//
// Server:
//
//	var hub topic.Hub // in-memory history; hub.Allow decides who may follow what
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
//	f.Register(mux) // topic.message
//	c := ws.NewClient(url, ws.ClientOptions{Dial: ws.DialOptions{Peer: jsonrpc.Options{Handler: mux}}, OnConnect: f.Resubscribe})
//	p, err := c.Peer(ctx)
//	err = f.Subscribe(ctx, p, "board")
//
// # The protocol
//
// Calls from the client: topic.subscribe with SubscribeParams
// {"topic", "since": {"epoch", "seq"}} ("since" optional), whose result is
// a SubscribeResult {"topic", "epoch", "seq", "recovered", "messages":
// [{"seq", "data"}]}; topic.unsubscribe with {"topic"}, whose result is
// true. Notifications from the server: topic.message with a Message
// {"topic", "epoch", "seq", "data"}. Errors: -32602 for malformed params,
// CodeNoSuchTopic (-32001, "no such topic") for a topic Hub.Allow refuses,
// -32603 when the history cannot be read.
//
// The server adds the subscriber before it reads the history for the
// reply, so a live message may arrive before the reply, and every message
// after the reply's seq arrives live. The client keeps a position per
// topic, applies the reply's messages after it, then the live ones,
// dropping a seq it has seen, holding those that come while a subscribe is
// in flight, and subscribing again (with since) on a gap, or without since
// when the epoch changes. Follower does all of this.
//
// A subscriber whose queue is full (Hub.MaxQueue) is dropped as a
// jsonrpc.Group drops a member: its connection ends with a cause wrapping
// jsonrpc.ErrSlowConsumer. When it comes back with its position, it
// recovers from the history what it missed, if the history still holds it.
package topic
