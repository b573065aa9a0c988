package topic_test

import (
	"context"
	"fmt"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// A Hub on the server's Mux, a Follower on the client's: the client gets
// each message once, in order, and after a drop it subscribes again with
// its position (Resubscribe, a ws.Client's OnConnect) and gets what it
// missed from the history.
func Example() {
	ctx := context.Background()
	hub := topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	smux := jsonrpc.NewMux()
	hub.Register(smux)

	got := make(chan string, 10)
	f := &topic.Follower{
		OnMessage: func(m topic.Message) { got <- fmt.Sprintf("%d %s", m.Seq, m.Data) },
		OnReset:   func(name string, at topic.Position) { got <- fmt.Sprintf("fetch %s as of seq %d", name, at.Seq) },
	}
	cmux := jsonrpc.NewMux()
	f.Register(cmux)
	connect := func() (client, server *jsonrpc.Peer) {
		a, b := jsonrpc.Pipe()
		return jsonrpc.NewPeer(b, jsonrpc.Options{Handler: cmux}), jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux})
	}

	client, server := connect()
	f.Subscribe(ctx, client, "board")
	fmt.Println(<-got)
	hub.Publish(ctx, "board", "first note")
	fmt.Println(<-got)

	client.Close() // the connection drops...
	server.Wait()
	hub.Publish(ctx, "board", "posted while away")

	client, server = connect() // ...and comes back
	f.Resubscribe(ctx, client)
	fmt.Println(<-got)
	client.Close()
	server.Wait()
	// Output:
	// fetch board as of seq 0
	// 1 "first note"
	// 2 "posted while away"
}
