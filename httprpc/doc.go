// Package httprpc serves and calls JSON-RPC 2.0 over HTTP, for callers
// that cannot hold a WebSocket or start a process: curl and shell scripts,
// serverless functions, webhooks, health checks.
//
// Plain HTTP POST, one message (a request or a batch) per request body and
// its reply in the response body:
//
//	mux := jsonrpc.NewMux()
//	jsonrpc.Register(mux, "add", func(ctx context.Context, p [2]int) (int, error) {
//		return p[0] + p[1], nil
//	})
//	hs := httprpc.NewHTTPServer("127.0.0.1:8080", &httprpc.Server{Peer: jsonrpc.Options{Handler: mux}})
//	go hs.ListenAndServe()
//
//	c := httprpc.NewClient("http://127.0.0.1:8080/")
//	var sum int
//	err := c.Call(ctx, "add", []int{1, 2}, &sum) // sum == 3
//
// or, from a shell:
//
//	curl -s -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}' http://127.0.0.1:8080/
//
// Server gives each HTTP request a Peer of its own, so every rule of the
// specification (parse errors, batches, ids byte for byte, notifications
// unanswered) is the Peer's, and jsonrpc.Options configure it as they do
// any Peer. Its handlers see the request's context values and are
// cancelled when the client goes away, but cannot call the client back:
// plain POST carries only replies (ErrNoCallbacks).
//
// For servers that call back, push notifications or stream progress, the
// package also serves MCP's Streamable HTTP transport: a [SessionServer]
// gives each session a Peer of its own, symmetric as every Peer is, whose
// inbound messages are POST bodies and whose outbound ones go out as
// server-sent events, on the stream of the POST they belong to (a call's
// callbacks and progress, then its reply) or on the session's GET stream.
// [Dial] is its client side, a Peer over such an endpoint. For MCP, both
// sides set MCP's cancellation and progress dialects, without which a
// cancelled call runs on and progress goes nowhere:
//
//	mcp := jsonrpc.Options{Handler: mux, Cancel: jsonrpc.MCPCancel, Progress: jsonrpc.MCPProgress}
//	http.Handle("/mcp", &httprpc.SessionServer{Peer: mcp})
//
//	p, err := httprpc.Dial(ctx, "http://127.0.0.1:8080/mcp", httprpc.DialOptions{
//		Peer: jsonrpc.Options{Handler: clientMux, Cancel: jsonrpc.MCPCancel, Progress: jsonrpc.MCPProgress},
//	})
//	err = p.Call(ctx, "initialize", params, &res) // the session starts
//
// A stream cut mid-call, or closed by a server that polls (SEP-1699), is
// resumed with Last-Event-ID, nothing lost or repeated, within the
// session's buffer. Defaults hold against hostile clients, pages and
// servers: a server answers to no Host name it was not given (loopback
// names on loopback, IP literals and localhost names elsewhere), and
// checks Origin against the Host (DNS rebinding; AllowedHosts and
// OriginPatterns open it, with CORS for the origins allowed); a session
// starts only with StartMethods (MCP's initialize), expires when idle or
// never used, is bounded per client, and may be bound to an Identity; a
// handler's sends wait for a client that reads a stream it opened, what
// a session keeps is counted at what it holds; Dial bounds every request
// it makes, retries what the server says is transient (429, 503), and
// fails the others with a *StatusError.
package httprpc
