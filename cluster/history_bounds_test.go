package cluster_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// jsCounts returns the topic streams under the default prefix and their
// consumers.
func jsCounts(t testing.TB, js jetstream.JetStream) (streams, consumers int) {
	t.Helper()
	ctx := testCtx(t, wait)
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		if !strings.HasPrefix(name, "jsonrpc_history_") {
			continue
		}
		streams++
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		cs := st.ConsumerNames(ctx)
		for range cs.Name() {
			consumers++
		}
		if err := cs.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	return streams, consumers
}

// TestHistorySubscribesMakeNothing (issue 30, finding 2, on JetStream):
// subscribes to 200 topics that have no stream make no stream and no
// consumer, and the consumers a node made for the topics it published on
// are gone once its Hub is closed, not minutes later.
func TestHistorySubscribesMakeNothing(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	js, err := jetstream.New(connect(t, ns.ClientURL()))
	if err != nil {
		t.Fatal(err)
	}
	s := newHubSite(t, ns.ClientURL(), cluster.HistoryOptions{})
	for c := range 2 {
		p, err := ws.Dial(testCtx(t, wait), s.url)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			var res topic.SubscribeResult
			if err := p.Call(testCtx(t, wait), topic.MethodSubscribe, topic.SubscribeParams{Topic: fmt.Sprintf("t%d-%d", c, i)}, &res); err != nil {
				t.Fatal(err)
			}
		}
		p.Close()
	}
	if streams, consumers := jsCounts(t, js); streams != 0 || consumers != 0 {
		t.Fatalf("200 subscribes made %d streams and %d consumers", streams, consumers)
	}
	for i := range 3 {
		if _, err := s.hub.Publish(testCtx(t, wait), fmt.Sprint("published-", i), i); err != nil {
			t.Fatal(err)
		}
	}
	if streams, consumers := jsCounts(t, js); streams != 3 || consumers != 3 {
		t.Fatalf("3 topics published on: %d streams, %d consumers; want 3 of each", streams, consumers)
	}
	s.kill() // the Hub's Close
	var consumers int
	deadline := time.Now().Add(5 * time.Second) // the deletes are not waited for; consumerIdle is 30 s
	for {
		if _, consumers = jsCounts(t, js); consumers == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if consumers != 0 {
		t.Fatalf("%d consumers 5 s after the Hub closed", consumers)
	}
}

// TestHistoryAbsentTopicThenPublished: a subscriber of a topic that has
// no stream gets the epoch "none" at seq 0; once another node publishes
// (making the stream), the subscriber's node follows it, and the
// subscriber goes on into the new epoch with its first message, live, and
// what follows: it saw nothing before, so nothing is lost and nothing is
// reset. It reset at seq 1 and never saw the first message, which a
// newcomer's bot met as a room's first message never echoed.
func TestHistoryAbsentTopicThenPublished(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	a := newHubSite(t, ns.ClientURL(), cluster.HistoryOptions{})
	b := newHubSite(t, ns.ClientURL(), cluster.HistoryOptions{})
	f := newFollower()
	dialFollower(t, a, f, "room", false)
	if pos, _ := f.Position("room"); pos != (topic.Position{Epoch: "none"}) {
		t.Fatalf("a topic with no stream: %+v", pos)
	}
	publishN(t, b, "room", 1, 1)
	waitFor(t, "the new stream's first message", func() bool {
		pos, _ := f.Position("room")
		return pos.Epoch != "none" && pos.Seq == 1
	})
	publishN(t, b, "room", 2, 3)
	if got := f.await(t, 4); got != "reset 0 "+events(1, 3) {
		t.Fatalf("the follower saw %s, want reset 0 %s", got, events(1, 3))
	}
}
