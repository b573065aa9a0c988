package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// topicNote is the data of the topic benchmarks' messages: about 100
// bytes, a sticky note's size.
var topicNote = json.RawMessage(`{"id":12345,"text":"a note of some forty characters, or so.","author":"alice","likes":3}`)

// topicFleet is a Hub behind a ws.Server with n ws.Dial clients, each
// subscribed to topic "t" and counting its messages in svc (Tick); the
// server-side Peers are in group too, for a broadcast without history.
type topicFleet struct {
	hub   *topic.Hub
	group jsonrpc.Group
	stop  func()
}

func startTopicFleet(tb testing.TB, svc *Service, n int) *topicFleet {
	f := &topicFleet{hub: &topic.Hub{Allow: topic.AllowAll, MaxQueue: 1 << 16}}
	f.group.MaxQueue = 1 << 16
	smux := jsonrpc.NewMux()
	f.hub.Register(smux)
	var connected atomic.Int64
	srv := &ws.Server{
		MaxConnections: n + 100,
		Peer:           jsonrpc.Options{Handler: smux},
		OnConnect: func(p *jsonrpc.Peer, _ *http.Request) {
			f.group.Add(p)
			connected.Add(1)
		},
	}
	addr, closeHTTP := HTTPServer(tb, srv)
	cmux := jsonrpc.NewMux()
	jsonrpc.RegisterNotification(cmux, topic.MethodMessage, func(context.Context, json.RawMessage) error {
		svc.Tick()
		return nil
	})
	peers := make([]*jsonrpc.Peer, n)
	f.stop = func() {
		parallel(n, dialWorkers, func(i int) error {
			if peers[i] != nil {
				peers[i].Close()
			}
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		closeHTTP()
		f.hub.Close()
	}
	err := parallel(n, dialWorkers, func(i int) error {
		p, err := ws.Dial(context.Background(), "ws://"+addr+"/", ws.DialOptions{Peer: jsonrpc.Options{Handler: cmux}})
		peers[i] = p
		if err != nil {
			return err
		}
		return p.Call(context.Background(), topic.MethodSubscribe, topic.SubscribeParams{Topic: "t"}, nil)
	})
	if err == nil && !waitFor(10*time.Second, func() bool { return connected.Load() == int64(n) }) {
		err = fmt.Errorf("only %d of %d clients connected", connected.Load(), n)
	}
	if err != nil {
		f.stop()
		tb.Fatal(err)
	}
	return f
}

// BenchmarkTopicBroadcast is W5 with positions: one message to 1,000
// WebSocket clients subscribed to a topic, timed until all of them
// received it; one op is one broadcast. hub is topic.Hub.Publish (seq,
// the in-memory history, then the topic's Group); group is
// jsonrpc.Group.Notify of the same topic.message params to the same
// clients, with no history: the cost of history on against off.
func BenchmarkTopicBroadcast(b *testing.B) {
	n, limit := MaxPeersForFDs(W5Clients)
	if n < W5Clients {
		b.Skipf("open-file limit %d is too low for %d clients", limit, W5Clients)
	}
	svc := &Service{}
	f := startTopicFleet(b, svc, W5Clients)
	defer f.stop()
	var seq uint64
	for _, mode := range []string{"group", "hub"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				done := svc.Arm(W5Clients)
				var err error
				if mode == "hub" {
					_, err = f.hub.Publish(ctx, "t", topicNote)
				} else {
					seq++
					err = f.group.Notify(topic.MethodMessage, topic.Message{Topic: "t", Epoch: "E", Seq: seq, Data: topicNote})
				}
				if err != nil {
					b.Fatal(err)
				}
				if lost, _ := svc.WaitTicks(done, W5Clients); lost > 0 {
					b.Fatalf("%d of %d clients did not receive the broadcast", lost, W5Clients)
				}
			}
		})
	}
}

// BenchmarkTopicCatchUp is a client's catch-up after a drop: a
// topic.subscribe with since over WebSocket on loopback, whose reply
// carries the 1,000 messages (of about 100 bytes) it missed, decoded;
// one op is one catch-up.
func BenchmarkTopicCatchUp(b *testing.B) {
	hub := topic.Hub{Allow: topic.AllowAll, MaxReplyBytes: -1} // the 1,000 in one reply, as before replies were paged
	defer hub.Close()
	var first topic.Position
	for i := range 1000 {
		pos, err := hub.Publish(ctx, "t", topicNote)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			first = topic.Position{Epoch: pos.Epoch}
		}
	}
	smux := jsonrpc.NewMux()
	hub.Register(smux)
	addr, closeHTTP := HTTPServer(b, &ws.Server{Peer: jsonrpc.Options{Handler: smux}})
	defer closeHTTP()
	p, err := ws.Dial(ctx, "ws://"+addr+"/")
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	b.ReportAllocs()
	for b.Loop() {
		var res topic.SubscribeResult
		if err := p.Call(ctx, topic.MethodSubscribe, topic.SubscribeParams{Topic: "t", Since: &first}, &res); err != nil {
			b.Fatal(err)
		}
		if !res.Recovered || len(res.Messages) != 1000 {
			b.Fatalf("recovered %v, %d messages", res.Recovered, len(res.Messages))
		}
		// Unsubscribe, so that the Group does not grow a member per op.
		if err := p.Call(ctx, topic.MethodUnsubscribe, topic.UnsubscribeParams{Topic: "t"}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTopicHistoryMemory fills the in-memory history of one topic
// per op to the default bound (1 MiB) and past it, with ~100-byte
// messages, and reports the heap the histories hold per topic (B/topic)
// and per message kept (B/msg); ns/op is the time to fill one topic.
func BenchmarkTopicHistoryMemory(b *testing.B) {
	perTopic := topic.DefaultMaxBytes/(len(topicNote)+64) + 100 // past the bound
	kept := topic.DefaultMaxBytes / (len(topicNote) + 64)
	hub := topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	b.StopTimer()
	before := MemInUse()
	b.StartTimer()
	n := 0
	for b.Loop() {
		name := fmt.Sprint("t", n)
		n++
		for range perTopic {
			// Publish marshals topicNote: a copy of its own per message.
			if _, err := hub.Publish(ctx, name, topicNote); err != nil {
				b.Fatal(err)
			}
		}
	}
	held := float64(int64(MemInUse()) - int64(before))
	b.ReportMetric(held/float64(n), "B/topic")
	b.ReportMetric(held/float64(n*kept), "B/msg")
}

// BenchmarkTopicPublishAlone is the broadcaster's own cost, with no
// subscriber to write to: hub is topic.Hub.Publish (marshal, seq, append
// to the in-memory history, trim, then the topic's Group), group is
// jsonrpc.Group.Notify of the same topic.message params. The difference
// is what the history costs per broadcast, whatever the audience.
func BenchmarkTopicPublishAlone(b *testing.B) {
	hub := topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	var group jsonrpc.Group
	var seq uint64
	for _, mode := range []string{"group", "hub"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if mode == "hub" {
					_, err = hub.Publish(ctx, "t", topicNote)
				} else {
					seq++
					err = group.Notify(topic.MethodMessage, topic.Message{Topic: "t", Epoch: "E", Seq: seq, Data: topicNote})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
