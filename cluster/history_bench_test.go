package cluster_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// benchNote is the data of the history benchmarks' messages: about 100
// bytes, as BenchmarkBroadcast's.
var benchNote = json.RawMessage(`{"text":"a note of a realistic size, about a hundred bytes long, for every page","seq":0}`)

// BenchmarkHistoryBroadcast is BenchmarkBroadcast with positions and
// history: one op is one topic.Hub.Publish on one node (in turn), stored
// in JetStream (file storage) and fanned out by every node's consumer,
// until every subscribed WebSocket client on every node has it.
func BenchmarkHistoryBroadcast(b *testing.B) {
	b.Run("1node-3000", func(b *testing.B) { benchHistoryBroadcast(b, 1, 3000) })
	b.Run("3nodes-3x1000", func(b *testing.B) { benchHistoryBroadcast(b, 3, 1000) })
}

func benchHistoryBroadcast(b *testing.B, nodes, perNode int) {
	clients := nodes * perNode
	needFiles(b, 2*clients+256)
	ns := startJetStream(b, -1, b.TempDir())
	var got atomic.Int64
	all := make(chan struct{}, 1)
	mux := jsonrpc.NewMux()
	jsonrpc.RegisterNotification(mux, topic.MethodMessage, func(context.Context, json.RawMessage) error {
		if got.Add(1)%int64(clients) == 0 {
			all <- struct{}{}
		}
		return nil
	})
	var sites []*hubSite
	for range nodes {
		s := newHubSite(b, ns.ClientURL(), cluster.HistoryOptions{MaxBytes: -1})
		s.hub.MaxQueue = 1 << 16
		sites = append(sites, s)
	}
	for _, s := range sites {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for range perNode {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				p, err := ws.Dial(testCtx(b, wait), s.url, ws.DialOptions{Peer: jsonrpc.Options{Handler: mux}})
				if err != nil {
					b.Error(err)
					return
				}
				b.Cleanup(func() { p.Close() })
				if err := p.Call(testCtx(b, wait), topic.MethodSubscribe, topic.SubscribeParams{Topic: "room"}, nil); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if b.Failed() {
		b.FailNow()
	}
	ctx := testCtx(b, time.Hour)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := sites[i%nodes].hub.Publish(ctx, "room", benchNote); err != nil {
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

// BenchmarkHistoryCatchUp: a client's catch-up from JetStream, on a node
// other than the one that published: one op is a topic.subscribe with
// since over WebSocket whose reply carries the 1,000 messages missed,
// read from the topic's stream (file storage) with a consumer made for it.
func BenchmarkHistoryCatchUp(b *testing.B) {
	ns := startJetStream(b, -1, b.TempDir())
	pub := newHubSite(b, ns.ClientURL(), cluster.HistoryOptions{})
	reader := newHubSite(b, ns.ClientURL(), cluster.HistoryOptions{})
	reader.hub.MaxReplyBytes = -1 // the 1,000 in one reply, as before replies were paged
	ctx := testCtx(b, time.Hour)
	var since topic.Position
	for i := range 1000 {
		pos, err := pub.hub.Publish(ctx, "room", benchNote)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			since = topic.Position{Epoch: pos.Epoch}
		}
	}
	p, err := ws.Dial(ctx, reader.url)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	b.ReportAllocs()
	for b.Loop() {
		var res topic.SubscribeResult
		if err := p.Call(ctx, topic.MethodSubscribe, topic.SubscribeParams{Topic: "room", Since: &since}, &res); err != nil {
			b.Fatal(err)
		}
		if !res.Recovered || len(res.Messages) != 1000 {
			b.Fatalf("recovered %v, %d messages", res.Recovered, len(res.Messages))
		}
		if err := p.Call(ctx, topic.MethodUnsubscribe, topic.UnsubscribeParams{Topic: "room"}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
