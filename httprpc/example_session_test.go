package httprpc_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// A session server and a client that dials it: each session is a Peer,
// and the client's Peer reaches it over POSTs and event streams. A session
// starts with a call of StartMethods (MCP's initialize by default).
func ExampleSessionServer() {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "greet", func(_ context.Context, p struct{ Name string }) (string, error) {
		return "hello, " + p.Name, nil
	})
	srv := &httprpc.SessionServer{Peer: jsonrpc.Options{Handler: mux}, StartMethods: []string{"greet"}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	client, err := httprpc.Dial(ctx, hs.URL, httprpc.DialOptions{HTTPClient: hs.Client()})
	if err != nil {
		panic(err)
	}
	defer client.Close() // sends DELETE: the session ends

	var greeting string
	if err := client.Call(ctx, "greet", map[string]string{"name": "MCP"}, &greeting); err != nil {
		panic(err)
	}
	fmt.Println(greeting, "- sessions:", srv.Sessions())
	// Output: hello, MCP - sessions: 1
}

// Dial with MCP's dialects: the server's handler asks the client to
// sample while its call runs, over the call's own event stream.
func ExampleDial() {
	server := jsonrpc.NewMux()
	server.HandleFunc("initialize", func(context.Context, *jsonrpc.Request) (any, error) {
		return map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}}, nil
	})
	server.HandleFunc("tools/call", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		var text string
		err := jsonrpc.PeerFromContext(ctx).Call(ctx, "sampling/createMessage", map[string]any{"maxTokens": 5}, &text)
		return "the model said " + text, err
	})
	srv := &httprpc.SessionServer{Peer: jsonrpc.Options{Handler: server, Progress: jsonrpc.MCPProgress, Cancel: jsonrpc.MCPCancel}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())

	client := jsonrpc.NewMux()
	client.HandleFunc("sampling/createMessage", func(context.Context, *jsonrpc.Request) (any, error) {
		return "hi", nil
	})
	ctx := context.Background()
	peer, err := httprpc.Dial(ctx, hs.URL, httprpc.DialOptions{
		HTTPClient:      hs.Client(),
		ProtocolVersion: "2025-06-18",
		Peer:            jsonrpc.Options{Handler: client, Progress: jsonrpc.MCPProgress, Cancel: jsonrpc.MCPCancel},
	})
	if err != nil {
		panic(err)
	}
	defer peer.Close()

	// The session starts with initialize.
	if err := peer.Call(ctx, "initialize", map[string]any{"protocolVersion": "2025-06-18"}, nil); err != nil {
		panic(err)
	}
	var out string
	if err := peer.Call(ctx, "tools/call", map[string]any{"name": "ask"}, &out); err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output: the model said hi
}
