package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// TestHistoryCatchUpNeverHangs (issue 30, finding 14): a catch-up whose
// messages are gone from the stream by the time they are read (deleted,
// or aged out between the stream's state and the read) is answered,
// recovered false, within a bound, instead of waiting for messages that
// will never come; with some gone in the middle too.
func TestHistoryCatchUpNeverHangs(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	js, err := jetstream.New(connect(t, ns.ClientURL()))
	if err != nil {
		t.Fatal(err)
	}
	s := newHubSite(t, ns.ClientURL(), cluster.HistoryOptions{})
	p, err := ws.Dial(testCtx(t, wait), s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, tc := range []struct {
		name string
		gone []uint64
	}{{"the tail", []uint64{5, 6, 7, 8, 9, 10}}, {"the middle", []uint64{6, 7}}} {
		t.Run(tc.name, func(t *testing.T) {
			room := "room-" + strings.ReplaceAll(tc.name, " ", "-")
			publishN(t, s, room, 1, 10)
			st, err := js.Stream(testCtx(t, wait), "jsonrpc_history_"+room)
			if err != nil {
				t.Fatal(err)
			}
			for _, seq := range tc.gone {
				if err := st.DeleteMsg(testCtx(t, wait), seq); err != nil {
					t.Fatal(err)
				}
			}
			var first topic.SubscribeResult
			if err := p.Call(testCtx(t, wait), topic.MethodSubscribe, topic.SubscribeParams{Topic: room}, &first); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			var res topic.SubscribeResult
			err = p.Call(testCtx(t, wait), topic.MethodSubscribe, topic.SubscribeParams{Topic: room, Since: &topic.Position{Epoch: first.Epoch, Seq: 4}}, &res)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("a catch-up since seq 4 with %v gone: %v after %v", tc.gone, err, took.Round(time.Millisecond))
			}
			if res.Recovered || res.Seq != 10 {
				t.Fatalf("a catch-up since seq 4 with %v gone: %+v", tc.gone, res)
			}
			t.Logf("answered in %v", took.Round(time.Millisecond))
		})
	}
}

// TestHistoryCatchUpPaged: a catch-up from JetStream longer than a reply
// may carry comes in pages of at most 64 KiB of messages, every message
// once and in order, the last page without more.
func TestHistoryCatchUpPaged(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	s := newHubSite(t, ns.ClientURL(), cluster.HistoryOptions{MaxBytes: 4 << 20})
	data := strings.Repeat("x", 300)
	var epoch string
	for range 1000 {
		pos, err := s.hub.Publish(testCtx(t, wait), "room", data)
		if err != nil {
			t.Fatal(err)
		}
		epoch = pos.Epoch
	}
	p, err := ws.Dial(testCtx(t, wait), s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	since, next, pages := topic.Position{Epoch: epoch}, uint64(1), 0
	for ; ; pages++ {
		var r topic.SubscribeResult
		if err := p.Call(testCtx(t, wait), topic.MethodSubscribe, topic.SubscribeParams{Topic: "room", Since: &since}, &r); err != nil {
			t.Fatal(err)
		}
		bytes := 0
		for _, e := range r.Messages {
			if e.Seq != next {
				t.Fatalf("page %d: seq %d, want %d", pages, e.Seq, next)
			}
			next++
			bytes += len(e.Data)
		}
		if !r.Recovered || len(r.Messages) == 0 || bytes > topic.DefaultMaxReplyBytes {
			t.Fatalf("page %d since %+v: recovered %v, %d messages, %d bytes; reply %+v", pages, since, r.Recovered, len(r.Messages), bytes, r)
		}
		if !r.More {
			break
		}
		since.Seq = r.Seq
	}
	if next != 1001 || pages < 4 {
		t.Fatalf("%d messages in %d pages", next-1, pages+1)
	}
	t.Logf("1000 messages of 300 bytes in %d pages", pages+1)
}
