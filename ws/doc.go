// Package ws runs JSON-RPC 2.0 Peers over WebSocket, with
// github.com/coder/websocket: one JSON-RPC message (object or batch array)
// per text WebSocket message.
//
// A server mounts a Server on any http.ServeMux, behind the middleware
// that authenticates requests; each connection gets its own Peer, whose
// handlers see the upgrade request's context values:
//
//	http.Handle("/rpc", auth(&ws.Server{Peer: jsonrpc.Options{Handler: mux}}))
//
// A client dials and gets a Peer:
//
//	peer, err := ws.Dial(ctx, "ws://127.0.0.1:8080/rpc")
//
// which may serve methods of its own that the server calls back:
//
//	peer, err := ws.Dial(ctx, url, ws.DialOptions{Peer: jsonrpc.Options{Handler: clientMux}})
//
// Dial also builds for the browser (GOOS=js GOARCH=wasm), where it uses the
// browser's WebSocket. A handshake that the server refuses with an HTTP
// status fails with a *StatusError: its code, and the start of its body.
//
// A client that should outlive its connection uses a Client, which dials
// again with backoff whenever the connection ends, runs Prepare before
// every attempt (to put fresh credentials in the upgrade request) and
// OnConnect on every connection (to authenticate and re-subscribe), and
// says per call what happens to a call in flight at a drop (see Client). It
// gives up on a refusal that will not change (a wrong path, credentials
// refused), and its calls then return that error:
//
//	c := ws.NewClient(url, ws.ClientOptions{
//		Peer:      jsonrpc.Options{Handler: clientMux},
//		Prepare:   signIn,      // sets a.Header's Authorization
//		OnConnect: resubscribe,
//	})
//	defer c.Close()
//	err := c.CallIdempotent(ctx, "board.list", nil, &notes)
//
// Every one of Server, DialOptions and ClientOptions names what it
// configures the same way: Peer (the jsonrpc.Options of each connection's
// Peer), Conn (the Options of its WebSocket) and, for a client, HTTPClient
// and HTTPHeader (its upgrade request). The Peer options' OnConnect and
// BaseContext apply on a Server as on any transport: the hook runs before
// Server.OnConnect, and the base lies beneath the request's context.
//
// What this package guarantees: a binary message closes the connection with
// status 1008 (policy violation); a text message that is not valid UTF-8
// closes it with status 1007 (invalid frame payload data), as RFC 6455
// requires, so that no id of it is ever echoed back in a text message a
// browser would refuse; a message over Options.MaxMessageSize closes it
// with status 1009 (message too big), and the close frame is not lost in a
// reset; a peer that sends nothing and stops answering pings is found
// within PingInterval+PingTimeout and its Peer ends with a
// cause wrapping ErrKeepalive, while a peer that pushes back, and so
// answers no ping, is kept as long as its own pings arrive; while a Peer
// pushes back (does not read), a peer that closes or resets the connection
// is found within about 2 s through Gone, while one that is alive and
// reading is never dropped (see Options.PingInterval); a close with status 1000 (normal closure), 1001
// (going away: a browser tab closing, a server shutting down), none (1005)
// or 4001 "gone" (what the module's browser client sends when it gives up a
// connection it takes for dead and reconnects) is a clean end, so the Peer's Wait returns nil, while any other ending is
// an error: another status (a websocket.CloseError in the chain), or the
// connection lost without a close frame (ErrConnectionLost); Close waits at
// most 1 s for the other side to answer its close frame, then drops the
// connection (on a Conn made by Dial, Accept or Server). Reads and writes
// use no context at all: coder/websocket closes the whole connection when a
// Read or Write context ends (and sets up a timer per write made with one),
// so a per-call context must never reach it; closing the Peer ends them
// instead, and still sends its close frame.
//
// Browsers: by default a Server accepts a request whose Origin header names
// the Server's own host, or that has no Origin header at all (browsers
// always send one, so such a request comes from a program, not a page).
// That stops cross-site WebSocket hijacking; Server.OriginPatterns allows
// other origins. Same-origin is not enough against DNS rebinding (a page
// whose name an attacker rebinds to an address of this machine sends that
// name as both Host and Origin), so a Server also refuses, unless
// Server.AllowedHosts lists it, any Host name but a loopback one
// (localhost, 127.0.0.1, [::1]) on a connection that arrived on loopback,
// and any but an IP literal or a localhost name on one that arrived on
// another address (a server on all interfaces reached at its LAN address);
// httprpc's servers share the rule.
package ws
