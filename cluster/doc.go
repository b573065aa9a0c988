// Package cluster lets an application that runs as several processes
// (nodes) behind a load balancer broadcast to the Peers of every node and
// call a Peer connected to another node, over NATS (core NATS: no
// JetStream, no persistence), and keep topics' history in JetStream for
// package topic (HistoryStore).
//
//	nc, err := nats.Connect(url, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1))
//	node, err := cluster.New(nc)
//	defer node.Close() // before nc.Close()
//
//	srv := &ws.Server{OnConnect: func(p *jsonrpc.Peer, r *http.Request) {
//		node.Topic("room:42").Add(p)     // leaves by itself when p ends
//		node.Register(userOf(r), p)      // a name any node can call
//	}}
//
//	node.Topic("room:42").Notify("note", note)            // every member, every node
//	err = node.Call(ctx, "alice", "confirm", args, &reply) // wherever alice is connected
//
// # Broadcasts
//
// Topic.Notify encodes params once and publishes one NATS message on
// <prefix>.topic.<name>. Each node hands it to its own members through a
// jsonrpc.Group, so the Group's slow-consumer policy holds cluster-wide: a
// member whose queue (Options.MaxQueue) is full is dropped, its connection
// ended with a cause wrapping jsonrpc.ErrSlowConsumer, and nobody else
// waits. The publishing node serves its own members directly and skips its
// own message when NATS brings it back (the message carries the origin node
// id in a header), so a node cut off from NATS keeps serving its own pages.
// A node subscribes to a topic's subject only while the topic has a local
// member: on the first Add, until the last member leaves.
//
// Delivery is at most once: a broadcast reaches each member once or not at
// all, never twice. Order is kept per publishing node: the broadcasts a node
// publishes on a topic reach every member, on every node, in the order of
// that node's Notify calls. Broadcasts of different nodes interleave in no
// particular order.
//
// # Topics with history
//
// A Topic's broadcasts are at most once: a page that drops misses what was
// sent meanwhile. For broadcasts with positions and catch-up, use a
// topic.Hub on every node with a HistoryStore as its Store (the
// protocol, topic.subscribe with since, is package topic's):
//
//	hist, err := cluster.NewHistoryStore(nc, cluster.HistoryOptions{Prefix: "app"})
//	hub := &topic.Hub{Store: hist, Allow: mayFollow}
//	hub.Register(mux)
//	pos, err := hub.Publish(ctx, "room:42", note) // every subscriber, every node
//
// Each topic has a JetStream stream of its own, <Prefix>_history_<name> on
// the subject <Prefix>.history.<name> (file storage, HistoryOptions.Replicas
// copies, bounded by MaxBytes and MaxAge: 1 MiB and 5 minutes by
// default), made by the topic's first publish (a subscribe makes nothing
// in JetStream), so a topic's positions are the stream's sequences and
// its epoch the stream's creation time; a stream deleted and made again
// is a new epoch on every node. Every node follows the streams of the
// topics it has open with a consumer of its own, deleted when the Hub
// releases the topic, and delivers to its own subscribers; a subscriber
// that comes back, to any node, recovers from the stream what it missed,
// across a node's restart and a NATS server's, a page at a time.
// Publishing needs JetStream: Publish fails while a node is cut off.
//
// A single process needs no NATS server of its own to keep topics' history
// across its restarts: run one inside it, with JetStream on a directory
// and no network listener, and connect in process (as examples/realtime's
// -nats-embed does; server is github.com/nats-io/nats-server/v2/server):
//
//	ns, err := server.NewServer(&server.Options{JetStream: true, StoreDir: dir, DontListen: true})
//	ns.Start()
//	if !ns.ReadyForConnections(10 * time.Second) { /* failed to start */ }
//	nc, err := nats.Connect("", nats.InProcessServer(ns))
//	hist, err := cluster.NewHistoryStore(nc, cluster.HistoryOptions{}) // one copy: no cluster
//	// at exit: hub.Close(), nc.Close(), ns.Shutdown(), ns.WaitForShutdown()
//
// # Named Peers
//
// Register gives a Peer a cluster-wide name (a user id, a session id); the
// node subscribes to <prefix>.peer.<name> (notifications: every holding
// node) and to <prefix>.call.<name> in queue group "call" (calls: one
// holding node). Node.Call reaches one holder: on this node if it holds the
// name (directly, without NATS); otherwise NATS request/reply reaches one
// node that does, chosen at random by NATS when several do, and there the
// Peer that registered the name most recently serves the call. The reply is
// a JSON-RPC response object, so an application's *jsonrpc.Error comes back
// with its code, message and data intact. Node.Notify reaches every holder
// of the name, on every node, through queues like a topic's. Both fail at
// once with an error wrapping ErrUnknownPeer when no node holds the name
// (NATS's no-responders status), with no timeout to wait for.
//
// Cancellation crosses the hop: when a cross-node Call's ctx ends first,
// the caller publishes the call's id on <prefix>.cancel, and the serving
// node cancels the ctx of its Peer.Call, which sends the cancel
// notification of that Peer's Options.Cancel dialect (jsonrpc.LSPCancel,
// say) to the page. A cancellation is advice: if it is lost, the call runs
// to its end and its reply is dropped. A node that dies while serving a
// call never replies: give Call a ctx with a deadline.
//
// Topic and peer names may be any strings: they are encoded into one NATS
// subject token (bytes other than printable ASCII, and '.', '*', '>', '%',
// become %XX). A topic's stream name escapes '/' and '\' too, and a name
// whose stream name would pass JetStream's 255 characters is a SHA-256 of
// it, the name itself kept in the stream's metadata and checked.
//
// # When NATS goes away
//
// The caller makes the nats.Conn, and chooses its reconnect behaviour; the
// Node never closes it. Recommended: nats.MaxReconnects(-1) (reconnect for
// ever) and nats.RetryOnFailedConnect(true), without which nats.Connect
// fails when NATS is down at start; with it, New succeeds at once, the node
// serves its own pages, and its subscriptions reach NATS once it is up.
//
// While the connection is down, Connected reports false, the node logs it
// (Info, and again when it is back), and it keeps serving its own members:
// its broadcasts reach them and calls to the names it holds work. What it
// publishes meanwhile is kept by nats.go in its reconnect buffer
// (nats.ReconnectBufSize, 8 MiB by default) and sent on reconnect, when it
// reaches the nodes that have resubscribed by then; once the buffer is
// full, Notify fails with an error wrapping nats.ErrReconnectBufExceeded
// (after this node's members got the broadcast). nats.go resubscribes on
// reconnect by itself. Broadcasts published by other nodes while this one
// was cut off are lost for its members. A cross-node Call or Notify made
// while the connection is down waits for its ctx.
//
// # Tracing
//
// Options.Hook and HistoryOptions.Hook (a Hook; the otel module's
// Telemetry.ClusterHook) see every broadcast, call and notification that
// crosses NATS, on the node that sends it and on the node that gets it,
// with the NATS message's headers, so that a trace goes from node to
// node; and the stream messages a HistoryStore appends and delivers, so
// that a topic.Hub's publish on one node and its deliveries on the others
// are in one trace. Topic.NotifyContext gives a broadcast its context.
// Without a Hook nothing is called and nothing more allocated
// (TestHookTopicAcrossNodes, TestHookCallAcrossNodes,
// TestHookNotifyAcrossNodes, TestHistoryHookCarriesContext).
//
// # Limits
//
// A message over the NATS server's max_payload (1 MiB unless configured):
// Topic.Notify, Node.Notify and Node.Call fail before anything is sent
// with an error wrapping ErrTooLarge (and nats.ErrMaxPayload); a result
// over it comes back as an error that says so. Each local member queues at
// most Options.MaxQueue broadcasts; a node serves at most Options.MaxCalls
// cross-node calls at once (beyond it, jsonrpc.CodeOverloaded); every
// message for a node passes through one queue of 65,536 messages, read by a
// goroutine that never waits for a Peer, past which nats.go drops messages
// and reports a slow consumer to the connection's error handler.
//
// Anyone who may publish on the prefix's subjects may broadcast to every
// page and call every named Peer: restrict them with NATS's own
// authorization.
package cluster
