package topic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// pair is a client Peer connected over a Pipe to a server Peer serving
// hub; live messages the client gets arrive on live.
type pair struct {
	client, server *jsonrpc.Peer
	live           chan topic.Message
}

func newPair(t testing.TB, hub *topic.Hub) *pair {
	t.Helper()
	mux := jsonrpc.NewMux()
	hub.Register(mux)
	a, b := jsonrpc.Pipe()
	pr := &pair{live: make(chan topic.Message, 10000)}
	pr.server = jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux})
	cmux := jsonrpc.NewMux()
	jsonrpc.RegisterNotification(cmux, topic.MethodMessage, func(_ context.Context, m topic.Message) error {
		pr.live <- m
		return nil
	})
	pr.client = jsonrpc.NewPeer(b, jsonrpc.Options{Handler: cmux})
	t.Cleanup(func() {
		pr.client.Close()
		pr.server.Close()
		pr.client.Wait()
		pr.server.Wait()
	})
	return pr
}

func (pr *pair) subscribe(t testing.TB, name string, since *topic.Position) (topic.SubscribeResult, error) {
	t.Helper()
	var res topic.SubscribeResult
	err := pr.client.Call(testCtx(t), topic.MethodSubscribe, topic.SubscribeParams{Topic: name, Since: since}, &res)
	return res, err
}

// next returns the next live message, failing the test after wait.
func (pr *pair) next(t testing.TB) topic.Message {
	t.Helper()
	select {
	case m := <-pr.live:
		return m
	case <-time.After(wait):
		t.Fatal("no live message")
		return topic.Message{}
	}
}

func publish(t testing.TB, hub *topic.Hub, name string, data any) topic.Position {
	t.Helper()
	pos, err := hub.Publish(testCtx(t), name, data)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return pos
}

func seqs(es []topic.Entry) []uint64 {
	var s []uint64
	for _, e := range es {
		s = append(s, e.Seq)
	}
	return s
}

// TestSubscribeReply pins the reply's rules of TOPICS.md: what since gives.
func TestSubscribeReply(t *testing.T) {
	hub := &topic.Hub{Allow: topic.AllowAll, Store: &topic.Memory{MaxBytes: 5 * (64 + 1)}} // the last 5 one-byte messages
	defer hub.Close()
	var epoch string
	for i := 1; i <= 8; i++ {
		epoch = publish(t, hub, "t", i).Epoch
	}
	pr := newPair(t, hub)
	for _, tc := range []struct {
		name      string
		since     *topic.Position
		recovered bool
		seqs      []uint64
	}{
		{"no since", nil, false, nil},
		{"since within the history", &topic.Position{Epoch: epoch, Seq: 5}, true, []uint64{6, 7, 8}},
		{"since the oldest kept minus one", &topic.Position{Epoch: epoch, Seq: 3}, true, []uint64{4, 5, 6, 7, 8}},
		{"since older than the history", &topic.Position{Epoch: epoch, Seq: 2}, false, nil},
		{"since the last", &topic.Position{Epoch: epoch, Seq: 8}, true, nil},
		{"since beyond the last", &topic.Position{Epoch: epoch, Seq: 9}, false, nil},
		{"another epoch", &topic.Position{Epoch: "other", Seq: 5}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := pr.subscribe(t, "t", tc.since)
			if err != nil {
				t.Fatal(err)
			}
			if res.Topic != "t" || res.Epoch != epoch || res.Seq != 8 || res.Recovered != tc.recovered {
				t.Fatalf("reply %+v, want topic t, epoch %s, seq 8, recovered %v", res, epoch, tc.recovered)
			}
			if got := seqs(res.Messages); fmt.Sprint(got) != fmt.Sprint(tc.seqs) {
				t.Fatalf("messages %v, want %v", got, tc.seqs)
			}
			for _, e := range res.Messages {
				if string(e.Data) != fmt.Sprint(e.Seq) {
					t.Fatalf("seq %d carries %s", e.Seq, e.Data)
				}
			}
		})
	}
}

// TestSubscribeReplyWire pins the reply's JSON: messages is [] when empty,
// never null, and seq is 0 on a topic with no message yet.
func TestSubscribeReplyWire(t *testing.T) {
	hub := topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	pr := newPair(t, &hub)
	var raw json.RawMessage
	if err := pr.client.Call(testCtx(t), topic.MethodSubscribe, map[string]string{"topic": "empty"}, &raw); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(raw, &got)
	if got["topic"] != "empty" || got["seq"] != 0.0 || got["recovered"] != false || fmt.Sprint(got["messages"]) != "[]" || got["epoch"] == "" {
		t.Fatalf("reply %s", raw)
	}
	var ok bool
	if err := pr.client.Call(testCtx(t), topic.MethodUnsubscribe, map[string]string{"topic": "empty"}, &ok); err != nil || !ok {
		t.Fatalf("unsubscribe: %v, %v", ok, err)
	}
}

// TestSubscribeErrors pins the errors: malformed params, a refused topic.
func TestSubscribeErrors(t *testing.T) {
	hub := &topic.Hub{Allow: func(ctx context.Context, name string) error {
		switch name {
		case "secret":
			return errors.New("not for you")
		case "custom":
			return jsonrpc.NewError(-32050, "sign in first", nil)
		}
		return nil
	}}
	defer hub.Close()
	pr := newPair(t, hub)
	for _, tc := range []struct {
		params any
		code   int64
		msg    string
	}{
		{map[string]any{}, jsonrpc.CodeInvalidParams, ""},
		{map[string]any{"topic": 42}, jsonrpc.CodeInvalidParams, ""},
		{map[string]any{"topic": "t", "since": "yesterday"}, jsonrpc.CodeInvalidParams, ""},
		{map[string]any{"topic": "secret"}, topic.CodeNoSuchTopic, "no such topic"},
		{map[string]any{"topic": "custom"}, -32050, "sign in first"},
	} {
		err := pr.client.Call(testCtx(t), topic.MethodSubscribe, tc.params, nil)
		e, ok := errors.AsType[*jsonrpc.Error](err)
		if !ok || e.Code != tc.code || tc.msg != "" && e.Message != tc.msg {
			t.Errorf("subscribe %v: %v, want code %d %q", tc.params, err, tc.code, tc.msg)
		}
	}
	if n := hub.Subscribers("secret"); n != 0 {
		t.Errorf("a refused subscribe left %d subscribers", n)
	}
}

// TestLiveInOrder: messages published reach a subscriber live, in seq
// order, with the topic and epoch; an unsubscribed one gets no more.
func TestLiveInOrder(t *testing.T) {
	const n = 500
	hub := topic.Hub{Allow: topic.AllowAll, MaxQueue: n} // a burst of n queued at once
	defer hub.Close()
	pr := newPair(t, &hub)
	res, err := pr.subscribe(t, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		publish(t, &hub, "t", map[string]int{"i": i})
	}
	for i := 1; i <= n; i++ {
		m := pr.next(t)
		if m.Topic != "t" || m.Epoch != res.Epoch || m.Seq != uint64(i) || string(m.Data) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
	if err := pr.client.Call(testCtx(t), topic.MethodUnsubscribe, topic.UnsubscribeParams{Topic: "t"}, nil); err != nil {
		t.Fatal(err)
	}
	publish(t, &hub, "t", "after")
	if hub.Subscribers("t") != 0 {
		t.Fatal("still subscribed after topic.unsubscribe")
	}
	select {
	case m := <-pr.live:
		t.Fatalf("message after unsubscribe: %+v", m)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestNoGapBetweenReplyAndLive: while a publisher publishes, a subscribe
// with since gets, in its reply and live together, every message after
// since, whatever the interleaving: the subscriber is added before the
// history is read.
func TestNoGapBetweenReplyAndLive(t *testing.T) {
	for round := range 20 {
		hub := topic.Hub{Allow: topic.AllowAll, MaxQueue: 1000}
		pr := newPair(t, &hub)
		first := publish(t, &hub, "t", 0)
		const n = 200
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 1; i < n; i++ {
				publish(t, &hub, "t", i)
			}
		})
		res, err := pr.subscribe(t, "t", &first)
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		seen := map[uint64]bool{}
		for _, e := range res.Messages {
			seen[e.Seq] = true
		}
		for want := res.Seq + 1; want <= n; want++ {
			m := pr.next(t)
			if m.Seq <= res.Seq {
				want-- // a duplicate of the reply's, which the client drops
				continue
			}
			if m.Seq != want {
				t.Fatalf("round %d: live seq %d, want %d", round, m.Seq, want)
			}
			seen[m.Seq] = true
		}
		for s := uint64(2); s <= n; s++ {
			if !seen[s] {
				t.Fatalf("round %d: seq %d neither in the reply (seq %d) nor live", round, s, res.Seq)
			}
		}
		hub.Close()
	}
}

// TestSubscriberLeavesWithItsPeer: a subscriber is forgotten when its
// connection ends.
func TestSubscriberLeavesWithItsPeer(t *testing.T) {
	hub := topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	pr := newPair(t, &hub)
	if _, err := pr.subscribe(t, "t", nil); err != nil {
		t.Fatal(err)
	}
	if n := hub.Subscribers("t"); n != 1 {
		t.Fatalf("%d subscribers, want 1", n)
	}
	pr.client.Close()
	pr.server.Wait()
	deadline := time.Now().Add(wait)
	for hub.Subscribers("t") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the subscriber outlived its connection")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEpochPerLog: a new Hub (a restarted process) has a new epoch, so a
// position of the old one is not recovered.
func TestEpochPerLog(t *testing.T) {
	old := topic.Hub{Allow: topic.AllowAll}
	pos := publish(t, &old, "t", 1)
	old.Close()
	hub := topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	publish(t, &hub, "t", 1)
	pr := newPair(t, &hub)
	res, err := pr.subscribe(t, "t", &pos)
	if err != nil {
		t.Fatal(err)
	}
	if res.Epoch == pos.Epoch || res.Recovered {
		t.Fatalf("old position %+v recovered from a new log: %+v", pos, res)
	}
}

// TestPublishAfterClose: Publish fails with ErrClosed once the Hub is closed.
func TestPublishAfterClose(t *testing.T) {
	hub := topic.Hub{Allow: topic.AllowAll}
	publish(t, &hub, "t", 1)
	hub.Close()
	if _, err := hub.Publish(testCtx(t), "t", 2); !errors.Is(err, topic.ErrClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
}

// TestSubscribeTwice: a second subscribe on the same connection replaces
// the first: its reply follows the same rules, and live messages still
// come once.
func TestSubscribeTwice(t *testing.T) {
	hub := topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	pr := newPair(t, &hub)
	first, err := pr.subscribe(t, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, &hub, "t", 1)
	again, err := pr.subscribe(t, "t", &topic.Position{Epoch: first.Epoch})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Recovered || fmt.Sprint(seqs(again.Messages)) != "[1]" {
		t.Fatalf("second subscribe: %+v", again)
	}
	publish(t, &hub, "t", 2)
	if m := pr.next(t); m.Seq != 1 {
		t.Fatalf("live %d, want 1", m.Seq)
	}
	if m := pr.next(t); m.Seq != 2 {
		t.Fatalf("live %d, want 2", m.Seq)
	}
	select {
	case m := <-pr.live:
		t.Fatalf("a message twice: %+v", m)
	case <-time.After(50 * time.Millisecond):
	}
	if n := hub.Subscribers("t"); n != 1 {
		t.Fatalf("%d subscribers, want 1", n)
	}
}

// TestConcurrentPublishersInOrder: publishers racing on one topic get
// distinct seqs, and each subscriber gets the messages in seq order.
func TestConcurrentPublishersInOrder(t *testing.T) {
	hub := topic.Hub{Allow: topic.AllowAll, MaxQueue: 10000}
	defer hub.Close()
	prs := []*pair{newPair(t, &hub), newPair(t, &hub)}
	for _, pr := range prs {
		if _, err := pr.subscribe(t, "t", nil); err != nil {
			t.Fatal(err)
		}
	}
	const publishers, each = 4, 250
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[uint64]bool{}
	for range publishers {
		wg.Go(func() {
			for range each {
				pos, err := hub.Publish(context.Background(), "t", nil)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[pos.Seq] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != publishers*each {
		t.Fatalf("%d distinct seqs for %d publishes", len(got), publishers*each)
	}
	for _, pr := range prs {
		for want := uint64(1); want <= publishers*each; want++ {
			if m := pr.next(t); m.Seq != want {
				t.Fatalf("live seq %d, want %d", m.Seq, want)
			}
		}
	}
}
