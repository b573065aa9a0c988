package jsonrpc_test

import (
	"context"
	"fmt"

	"github.com/peerwire/jsonrpc"
)

// Example is the happy path that the package doc and the README show: a
// server and a client Peer over an in-memory Pipe.
func Example() {
	ctx := context.Background()
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "add", func(ctx context.Context, p [2]int) (int, error) {
		return p[0] + p[1], nil
	})
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux})
	client := jsonrpc.NewPeer(b)
	var sum int
	err := client.Call(ctx, "add", []int{1, 2}, &sum) // sum == 3
	fmt.Println(sum, err)
	client.Close()
	server.Wait()
	// Output: 3 <nil>
}
