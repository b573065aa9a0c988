package httprpc_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// A session server and a client that dials it: each session is a Peer,
// and the client's Peer reaches it over POSTs and event streams.
func ExampleSessionServer() {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "greet", func(_ context.Context, p struct{ Name string }) (string, error) {
		return "hello, " + p.Name, nil
	})
	srv := &httprpc.SessionServer{Peer: jsonrpc.Options{Handler: mux}}
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
