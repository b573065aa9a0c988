package cluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
)

// A broadcast across two nodes: a page connected to node 2 is a member of
// the topic "room", and node 1 notifies the topic. The NATS server is
// embedded and listens on no port; each node has its own connection to it,
// as two processes would.
func ExampleTopic() {
	ns, err := server.NewServer(&server.Options{DontListen: true, NoLog: true, NoSigs: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	ns.Start()
	defer ns.WaitForShutdown()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		fmt.Println("NATS did not start")
		return
	}
	var stops []func()
	node := func() *cluster.Node {
		nc, err := nats.Connect("", nats.InProcessServer(ns))
		if err != nil {
			panic(err)
		}
		n, err := cluster.New(nc)
		if err != nil {
			panic(err)
		}
		stops = append(stops, func() { n.Close(); nc.Close() })
		return n
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	node1, node2 := node(), node()

	// A page of node 2 (over a Pipe here; a ws.Server's OnConnect in an
	// application) joins the topic.
	got := make(chan string, 1)
	mux := jsonrpc.NewMux()
	jsonrpc.RegisterNotification(mux, "note", func(ctx context.Context, p []string) error {
		got <- p[0]
		return nil
	})
	a, b := jsonrpc.Pipe()
	member, page := jsonrpc.NewPeer(a), jsonrpc.NewPeer(b, jsonrpc.Options{Handler: mux})
	defer func() { page.Close(); member.Close(); page.Wait(); member.Wait() }()
	node2.Topic("room").Add(member)
	// Node 2 subscribes on the first Add; Flush returns once NATS has it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node2.Flush(ctx); err != nil {
		fmt.Println(err)
		return
	}

	node1.Topic("room").Notify("note", []string{"posted on node 1"})
	select {
	case text := <-got:
		fmt.Println("the page on node 2 got:", text)
	case <-ctx.Done():
		fmt.Println("no broadcast")
	}
	// Output: the page on node 2 got: posted on node 1
}
