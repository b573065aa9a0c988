package cluster_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// TestHistoryTail (issue 31.10, on JetStream): a subscribe that asks for
// history gets the stream's last messages, the newest within the reply's
// bounds; a hostile N is capped; Hub.History reads them on a node that
// never held the topic, from the shared history.
func TestHistoryTail(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	a := newHubSite(t, ns.ClientURL(), cluster.HistoryOptions{})
	b := newHubSite(t, ns.ClientURL(), cluster.HistoryOptions{})
	b.hub.MaxReplyBytes = 350
	for i := 1; i <= 30; i++ {
		if _, err := a.hub.Publish(testCtx(t, wait), "t", strings.Repeat("x", 98)); err != nil {
			t.Fatal(err)
		}
	}
	last, msgs, err := b.hub.History(testCtx(t, wait), "t", 4)
	if err != nil || last.Seq != 30 || len(msgs) != 4 || msgs[0].Seq != 27 || msgs[0].Epoch != last.Epoch {
		t.Fatalf("History(t, 4) on the other node = %v, %d messages from %v, %v", last, len(msgs), msgs[:min(len(msgs), 1)], err)
	}
	for _, site := range []*hubSite{a, b} {
		p, err := ws.Dial(testCtx(t, wait), site.url)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var res topic.SubscribeResult
		err = p.Call(testCtx(t, wait), topic.MethodSubscribe, topic.SubscribeParams{Topic: "t", History: 1_000_000_000}, &res)
		want := "[1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30]"
		if site == b {
			want = "[28 29 30]" // 350 bytes of 100-byte messages
		}
		var got []uint64
		for _, e := range res.Messages {
			got = append(got, e.Seq)
		}
		if err != nil || res.Recovered || res.Seq != 30 || fmt.Sprint(got) != want {
			t.Fatalf("history 10^9: %v %+v, want messages %s", err, got, want)
		}
	}
}
