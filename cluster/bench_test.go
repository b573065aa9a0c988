package cluster_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
)

// BenchmarkBroadcast: one op is one broadcast, published on one node (in
// turn), until every WebSocket client on every node has received it.
func BenchmarkBroadcast(b *testing.B) {
	b.Run("1node-3000", func(b *testing.B) { benchBroadcast(b, 1, 3000) })
	b.Run("3nodes-3x1000", func(b *testing.B) { benchBroadcast(b, 3, 1000) })
}

func benchBroadcast(b *testing.B, nodes, perNode int) {
	clients := nodes * perNode
	needFiles(b, 2*clients+256) // both ends of each WebSocket, and NATS
	ns := startNATS(b, -1)
	var got atomic.Int64
	all := make(chan struct{}, 1) // a broadcast has reached every client
	handler := jsonrpc.HandlerFunc(func(_ context.Context, req *jsonrpc.Request) (any, error) {
		if got.Add(1)%int64(clients) == 0 {
			all <- struct{}{}
		}
		return nil, nil
	})
	var sites []*site
	for range nodes {
		sites = append(sites, newSite(b, ns.ClientURL(), cluster.Options{}, joinRoom))
	}
	for _, s := range sites {
		dialMany(b, s, perNode, jsonrpc.Options{Handler: handler})
	}
	flush(b, sites...)
	params := map[string]any{"text": "a note of a realistic size, about a hundred bytes long, for every page", "seq": 0}

	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		params["seq"] = i
		if err := sites[i%nodes].node.Topic("room").Notify("tick", params); err != nil {
			b.Fatal(err)
		}
		select {
		case <-all:
		case <-time.After(wait):
			b.Fatalf("broadcast %d reached %d of %d clients", i, got.Load()%int64(clients), clients)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(clients), "ns/delivery")
}

// dialMany connects n clients to s, a few at a time.
func dialMany(b *testing.B, s *site, n int, o jsonrpc.Options) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			dial(b, s, "", o)
		})
	}
	wg.Wait()
}

// BenchmarkNamedCall: a call to a Peer registered by name (a WebSocket
// client that echoes), from the node that holds the name (a direct
// Peer.Call) and from another node (over NATS request/reply).
func BenchmarkNamedCall(b *testing.B) {
	ns := startNATS(b, -1)
	a := newSite(b, ns.ClientURL(), cluster.Options{}, registerByQuery)
	h := newSite(b, ns.ClientURL(), cluster.Options{}, registerByQuery)
	openPage(b, h, "alice")
	flush(b, h)
	ctx := testCtx(b, time.Hour)
	params := map[string]string{"text": "hello"}
	for _, bc := range []struct {
		name string
		from *cluster.Node
	}{{"local", h.node}, {"cross-node", a.node}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var res map[string]string
			for b.Loop() {
				if err := bc.from.Call(ctx, "alice", "echo", params, &res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// needFiles skips the benchmark when the open-file limit is below n.
func needFiles(b *testing.B, n int) {
	if lim := openFileLimit(); lim >= 0 && lim < int64(n) {
		b.Skipf("needs %d open files, the limit is %d (raise it with ulimit -n)", n, lim)
	}
}
