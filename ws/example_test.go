//go:build !js

package ws_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// A server on an http.ServeMux (here an httptest server on loopback) and a
// client that dials it.
func ExampleServer() {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "add", func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil })
	srv := &ws.Server{Peer: jsonrpc.Options{Handler: mux}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	peer, err := ws.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer peer.Wait()
	defer peer.Close()
	var sum int
	err = peer.Call(ctx, "add", [2]int{2, 40}, &sum)
	fmt.Println(sum, err)
	// Output: 42 <nil>
}

// A Client outlives its connections: it dials again whenever the
// connection ends, and OnConnect runs on every connection before calls
// flow on it.
func ExampleNewClient() {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "hello", func(_ context.Context, p []string) (string, error) { return "hello, " + p[0], nil })
	srv := &ws.Server{Peer: jsonrpc.Options{Handler: mux}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())

	c := ws.NewClient("ws"+strings.TrimPrefix(hs.URL, "http"), ws.ClientOptions{
		OnConnect: func(ctx context.Context, p *jsonrpc.Peer) error {
			fmt.Println("connected") // authenticate, re-subscribe here
			return nil
		},
	})
	defer c.Close()
	var greeting string
	err := c.CallIdempotent(context.Background(), "hello", []string{"world"}, &greeting)
	fmt.Println(greeting, err, c.State())
	// Output:
	// connected
	// hello, world <nil> connected
}
