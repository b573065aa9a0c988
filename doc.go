// Package jsonrpc implements JSON-RPC 2.0 as a symmetric Peer: one object
// that is client and server at once on a single connection. Either side may
// call, notify and serve the other, over any transport that moves whole
// messages (see Conn):
//
//   - WebSocket, package ws: ws.Server serves a Peer per connection,
//     ws.Dial and ws.NewClient (which reconnects) make client Peers;
//   - stdio, package stdio: LSP's Content-Length framing or one message
//     per line (MCP's), on standard input and output, any reader and
//     writer, or a child process (stdio.Command); stdio.Serve runs a Peer
//     until the stream ends or a handler calls stdio.Exit;
//   - HTTP, package httprpc: plain POST, one message per request
//     (httprpc.Server, httprpc.Client), and MCP's Streamable HTTP sessions,
//     in which either side calls the other (httprpc.SessionServer,
//     httprpc.Dial);
//   - the in-memory Pipe, for tests and examples.
//
// Package topic adds numbered broadcasts with history on top of any of
// them, and package browser serves jsonrpc.js, the page's client.
//
// The happy path (Example runs it):
//
//	mux := jsonrpc.NewMux()
//	jsonrpc.Register(mux, "add", func(ctx context.Context, p [2]int) (int, error) {
//		return p[0] + p[1], nil
//	})
//	a, b := jsonrpc.Pipe()
//	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux})
//	client := jsonrpc.NewPeer(b)
//	var sum int
//	err := client.Call(ctx, "add", []int{1, 2}, &sum) // sum == 3
//	client.Close(); server.Wait()
//
// Over a real transport, only where the Peers come from changes:
//
//	http.Handle("/rpc", &ws.Server{Peer: jsonrpc.Options{Handler: mux}}) // a server Peer per connection
//	client, err := ws.Dial(ctx, "ws://127.0.0.1:8080/rpc")                // a client Peer
//
//	os.Exit(stdio.Serve(stdio.Stdio(), jsonrpc.Options{Handler: mux}))   // a tool its parent starts
//
//	http.Handle("/mcp", &httprpc.SessionServer{Peer: jsonrpc.Options{Handler: mux}})
//	client, err := httprpc.Dial(ctx, "http://127.0.0.1:8080/mcp") // then Call "initialize": a session starts with it
//
// A handler reaches its own Peer with PeerFromContext, to call or notify
// the other side while it serves, and its request with RequestFromContext.
// The README's guides (a browser app, an LSP-style tool, a tool server for
// agents) build on this.
//
// # Concurrency
//
// What runs concurrently, what is ordered, and what a handler may do:
//
//   - Every method of a Peer is safe for concurrent use.
//   - Inbound calls run concurrently, up to Options.MaxConcurrent handlers
//     at once, batch elements included; more wait in a queue bounded by
//     Options.MaxQueued and Options.MaxQueuedBytes, and a call that finds
//     it full is answered at once with CodeOverloaded.
//   - Inbound notifications run one at a time in arrival order, whether
//     they come alone or in a batch, and a call starts only once the
//     notifications that arrived before it (those of its own batch
//     included) have been handled (LSP relies on both: a hover after a
//     run of didChange sees every change), unless
//     Options.ConcurrentNotifications. A
//     notification handler that waits for a reply of its own lets the
//     calls behind it start, since the other side may need one of them to
//     answer.
//   - The calls of an inbound batch are served in turn by the goroutine
//     that took the batch, which costs no goroutine per element. Whenever
//     100 µs pass without an element finishing while others wait to start,
//     a helper joins, up to Options.BatchConcurrency elements at once,
//     each in a slot of its own; so elements that block, or wait for one
//     another, still run concurrently. One reply array is written when all
//     are done.
//   - A reply reaches its caller as soon as it arrives; it does not wait
//     for notifications that came before it to be handled, since a
//     notification handler may itself be waiting for that caller. Progress
//     that belongs to a call is the exception, by design: with
//     Options.Progress (LSPProgress, MCPProgress), a Call whose ctx comes
//     from WithProgress or WithPartialResults gets a token in its params,
//     the read loop routes each progress notification for that token to
//     the call, as it routes replies, and the caller's function runs on
//     the caller's goroutine, in arrival order; every one that arrived
//     before the reply has run before Call returns. Progress after the
//     reply is dropped. A handler reports with ReportProgress and
//     ReportPartialResult, written before its reply.
//   - The read loop routes replies to waiting calls as soon as they arrive
//     and never runs user code, so a handler may call back the other side
//     (PeerFromContext gives it its Peer) even when every handler slot is
//     busy.
//   - Call, Notify and Batch honour their ctx to the end: a message whose
//     ctx has ended before it is queued, or while it is still queued, is
//     never sent, and the caller never waits for a write in progress.
//   - A handler may call Close or Shutdown; it must not call Wait. So may
//     Options.OnConnect, to refuse the connection.
//   - A handler's Call or Batch on its own Peer gives its slot back while
//     it waits and takes one back before it returns; when its ctx ends and
//     no slot is free, it returns at once and the handler goes on with its
//     slot taken on credit (counted at once, over MaxConcurrent if need
//     be; no queued call starts until the lane is back under it).
//
// # Flow control, and why it cannot deadlock
//
// Memory is bounded in bytes on both paths. Inbound requests waiting or
// running, and the replies of inbound batches being served, are bounded by
// Options.MaxQueuedBytes (and calls by MaxQueued); outbound messages not
// yet written by Options.MaxOutboundBytes. One goroutine, the writer, owns
// the Conn's Write; everything else queues. Every path that holds bytes has
// its budget:
//
//   - a request read: MaxQueuedBytes (calls and batches refused past it;
//     notifications, alone or in a batch, pushed back, or taken up to twice
//     it while pushing back could deadlock, then the connection ends),
//     charged at the capacity of the slice the Conn returned, which its
//     params keep alive (an all-notification batch is charged the whole
//     message); a batch split into its notifications and its calls
//     copies the smaller part out, so that neither keeps the other's
//     bytes, and with ConcurrentNotifications every notification of a
//     batch is copied out;
//   - a batch's element replies, until its arrays are queued:
//     MaxQueuedBytes (elements that would start past it get
//     CodeOverloaded unrun);
//   - a handler's reply waiting for room in the outbound queue: its
//     handler slot, so MaxConcurrent replies at most (counted with the
//     inbound work, not budgeted: a remote side that reads slowly is not
//     refused for it);
//   - a message queued for writing: MaxOutboundBytes, charged at the
//     capacity it keeps alive (a small message in a large pooled buffer
//     is copied out of it); a single message larger than the budget goes
//     alone; none larger than the Conn's Limiter (a batch's replies go in
//     several arrays then, each within it, and an id too long to answer
//     within it is answered with id null); one withdrawn by its caller,
//     or whose caller's ctx has ended, lets go of its bytes at once;
//   - the replies to this Peer's own calls: a Call's goes to its caller at
//     once; a Batch's results, copied out of their messages, wait for its
//     last reply (the results the caller asked for: no budget);
//   - the read loop's own refusals and cancel notifications: 1 MiB, past
//     which the connection ends with ErrSlowConsumer;
//   - progress waiting for callers' functions (Options.Progress): a budget
//     of MaxQueuedBytes of its own, for all calls, each value copied out
//     of its notification; the call whose progress does not fit fails at
//     once with ErrOverloaded, and is cancelled;
//   - the method names the read loop keeps so as not to allocate one per
//     request: 256 names of at most 64 bytes;
//   - a Group member's broadcasts: Group.MaxQueue (packed into one batch
//     array with Options.PackNotifications: a pooled buffer of at most
//     16 KiB and the Conn's limit while it is written);
//   - replies a handler budgets itself (topic.Hub's subscribe replies,
//     MaxConnReplyBytes per connection): counted from before they are
//     built until AfterReply says they left;
//   - the message being read: the transport's MaxMessageSize;
//   - what a transport holds of its own: its budget (an HTTP session's
//     undelivered and resumable events: httprpc.SessionServer's
//     MaxBufferedBytes, past which the session ends).
//
// Bounded queues, back-pressure and handlers that write can make a cycle
// between two Peers: A's read loop waits for room, which waits for A's
// handler, which waits to write to B, whose read loop waits for room, and
// so on back to A. What may wait on what here:
//
//   - The read loop waits only for the next message, and for a
//     notification's room (back-pressure) while nothing on this side waits
//     on the remote side: no call awaits a reply, and nobody waits for room
//     in the outbound queue or for a write. It re-checks that at least
//     every 10 ms and when a handler parks; when it no longer holds, the
//     read loop reads on, taking notifications beyond the budget up to
//     twice it, and past that ends the connection (ErrOverloaded). While
//     it waits for room it also waits on the Conn's Gone channel (see
//     Watcher), so a remote side that goes away then is still noticed. It
//     never waits to write (its own replies have a small budget of their
//     own, past which the connection ends with ErrSlowConsumer), never
//     waits for a handler slot, and never runs user code. The
//     notifications of a batch take this path as one sent alone does; its
//     calls are refused or taken at once.
//   - The writer waits only for the Conn (the remote side's reading; a
//     Router's WriteFor is that write too), and for nothing when the queue
//     is empty. A caller with no ctx to honour
//     (a handler's reply, a call with a ctx that never ends) writes in the
//     writer's place when nothing is queued, and waits as the writer
//     would; it counts as waiting on the remote side meanwhile.
//   - Callers (Call, Notify, Batch, from handlers or not), and runners
//     queuing a handler's reply, wait for room in the outbound queue or for
//     the writer; a Call waits for its reply from the read loop. Those
//     that have a ctx leave when it ends.
//   - A handler waiting for a slot (after a reply, or a batch element)
//     waits for a handler that holds one: in user code, or queuing a reply.
//     One that takes its slot back after a Call leaves when that Call's
//     ctx ends, on credit.
//   - A batch element that finds the inbound budget full waits for
//     nothing: it is answered CodeOverloaded without running.
//   - A runner serving an inbound batch waits for its helpers only once it
//     has no element left to start, and only after giving its slot back;
//     the timer that adds helpers waits for nothing but the batch's own
//     mutex, held for a few instructions (inbatch.go).
//   - A handler that budgets its own replies through AfterReply (a
//     topic.Hub subscribe) waits for earlier replies of its connection to
//     leave their runners (queued, written in place, or given up): a wait
//     on runners that wait only for the writer, as queuing a reply does;
//     it leaves when its ctx ends. AfterReply's functions run on the
//     runner, after its reply left, outside the Peer's locks.
//   - A Group's member queue is written by a goroutine of the member's
//     that waits for the writer; Group.Notify waits for nothing.
//   - The read loop queues a call's progress without waiting: when the
//     call's budget is spent it fails the call, and waits for nothing.
//     A caller waiting in Call runs its progress functions on its own
//     goroutine; one that calls the other side back waits, as any Call
//     does, for the writer and for its reply from the read loop, which
//     never waits for it. The call's own reply waits, in the caller's
//     hands, for the functions: an edge from that caller to itself, not
//     to the read loop. A handler's ReportProgress waits for the writer,
//     as Notify does.
//
// Every edge into the remote side starts at the writer, and the only edge
// from the read loop to local waiters (room for a notification) exists only
// while no local waiter waits on the writer or the read loop. So a cycle
// through both Peers needs an edge that is not there, and a local cycle
// (the read loop waiting for a handler that waits for a reply) likewise:
// the graph has no cycle under any Options. A handler that waits on the
// remote side through something this package cannot see (another
// connection, a channel fed by a goroutine of yours that calls back) is
// outside this argument; Options.WriteTimeout bounds what a stuck remote
// side can hold.
//
// Arguments miss paths, so a machine checks this one: the repository's
// TestSim runs two Peers from random seeds, with small budgets, random
// mixes of calls, notifications, batches, callbacks, blocking handlers,
// sides that stop reading and faults, and holds every run to the
// invariants above: every call returns within a bound of its ctx's end
// (no deadlock), retained bytes stay within the budgets, notifications are
// handled once and in order, and a side whose remote goes ends even while
// it pushes back. docs/guarantees.md lists the test that holds each
// promise here.
//
// # Interceptors
//
// Options.Interceptors wrap every inbound handler and every outbound call
// and notification, with the method, the id and the params at hand; they
// log, time, check tokens, count and trace (see Interceptor).
//
// # Programs built on it
//
// The repository's examples are small real programs: examples/realtime, a
// browser app whose page talks to Go over a WebSocket (calls, a batch,
// server push to every page, on every node, through a cluster Topic, and
// the server calling a method on the page); examples/lsp, a language server
// over stdio with LSP's header framing; examples/agent, a host that starts
// tools as child processes over line-framed stdio, as MCP does, and serves
// the callbacks they make on the same pipe; examples/mcptool, an MCP server
// such a host starts, which calls back into the agent (roots, sampling)
// while the agent's call runs; examples/conformance, the server that
// interop suites drive.
//
// # The specification, exactly
//
// Ids are kept as the raw JSON text the other side sent and go back byte for
// byte: large integers never pass through float64. A request with "id": null
// is a call; only a valid request without an id is a notification, and a
// notification never gets a reply. Batches are answered as the
// specification's section 7 shows: [] gets one Invalid Request object, an
// all-notification batch gets nothing, and replies to our own batches are
// matched by id, never by position. Errors are *Error values, which are both
// Go errors and the wire object.
package jsonrpc
