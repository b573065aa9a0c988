package topic_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// Issue 31.10, history on a first subscription: a subscribe with
// "history": N and no since (or a since that cannot be recovered) is
// answered with the topic's last N messages, in the reply, so that a page
// shows a backlog with no race between a fetch and the live messages.

func (pr *pair) subscribeN(t testing.TB, name string, since *topic.Position, n int) (topic.SubscribeResult, error) {
	t.Helper()
	var res topic.SubscribeResult
	err := pr.client.Call(testCtx(t), topic.MethodSubscribe, topic.SubscribeParams{Topic: name, Since: since, History: n}, &res)
	return res, err
}

// TestSubscribeHistory pins the reply: the last N messages with their
// seqs, ending at the reply's seq, recovered false (the client's position
// was not recovered: it starts from the first of them); a since that is
// recovered gets what follows it, N or not; fewer than N when the history
// holds fewer; a negative N is refused.
func TestSubscribeHistory(t *testing.T) {
	hub := &topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	pr := newPair(t, hub)
	var last topic.Position
	for i := 1; i <= 10; i++ {
		last = publish(t, hub, "t", i)
	}
	res, err := pr.subscribeN(t, "t", nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Recovered || res.Seq != 10 || res.Epoch != last.Epoch || fmt.Sprint(seqs(res.Messages)) != "[8 9 10]" || string(res.Messages[0].Data) != "8" {
		t.Fatalf("history 3: %+v, want recovered false at seq 10 with messages 8..10", res)
	}
	res, err = pr.subscribeN(t, "t", &topic.Position{Epoch: "gone", Seq: 4}, 2)
	if err != nil || res.Recovered || fmt.Sprint(seqs(res.Messages)) != "[9 10]" {
		t.Fatalf("another epoch, history 2: %+v %v, want messages 9 10", res, err)
	}
	res, err = pr.subscribeN(t, "t", &topic.Position{Epoch: last.Epoch, Seq: 7}, 1)
	if err != nil || !res.Recovered || fmt.Sprint(seqs(res.Messages)) != "[8 9 10]" {
		t.Fatalf("recovered since 7, history 1: %+v %v, want recovered 8..10", res, err)
	}
	res, err = pr.subscribeN(t, "t", nil, 50)
	if err != nil || len(res.Messages) != 10 || res.Messages[0].Seq != 1 {
		t.Fatalf("history 50 of 10: %+v %v, want all 10", res, err)
	}
	res, err = pr.subscribeN(t, "t", nil, 0)
	if err != nil || len(res.Messages) != 0 || res.Seq != 10 {
		t.Fatalf("history 0: %+v %v, want no messages at seq 10", res, err)
	}
	res, err = pr.subscribeN(t, "empty", nil, 5)
	if err != nil || len(res.Messages) != 0 || res.Seq != 0 {
		t.Fatalf("history 5 of an empty topic: %+v %v", res, err)
	}
	_, err = pr.subscribeN(t, "t", nil, -1)
	if e, ok := errors.AsType[*jsonrpc.Error](err); !ok || e.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("history -1: %v, want invalid params", err)
	}
}

// TestSubscribeHistoryBounded: a hostile N (10^9) gets no more than one
// reply may carry (MaxReplyMessages, MaxReplyBytes), the newest, and at
// least one message; the history is read for no more than that.
func TestSubscribeHistoryBounded(t *testing.T) {
	hub := &topic.Hub{Allow: topic.AllowAll, Store: &topic.Memory{MaxBytes: 8 << 20}}
	defer hub.Close()
	pr := newPair(t, hub)
	for i := 1; i <= 1500; i++ {
		publish(t, hub, "t", i)
	}
	res, err := pr.subscribeN(t, "t", nil, 1_000_000_000)
	if err != nil || len(res.Messages) != topic.DefaultMaxReplyMessages || res.Messages[0].Seq != 501 || res.Seq != 1500 {
		t.Fatalf("history 10^9 of 1,500: %d messages from %v, err %v; want the last %d", len(res.Messages), seqs(res.Messages[:1]), err, topic.DefaultMaxReplyMessages)
	}

	small := &topic.Hub{Allow: topic.AllowAll, MaxReplyBytes: 350, MaxReplyMessages: 50}
	defer small.Close()
	sp := newPair(t, small)
	big := strings.Repeat("x", 98) // 100 bytes of JSON
	for range 10 {
		publish(t, small, "t", big)
	}
	res, err = sp.subscribeN(t, "t", nil, 1_000_000_000)
	if err != nil || fmt.Sprint(seqs(res.Messages)) != "[8 9 10]" {
		t.Fatalf("history 10^9 within 350 bytes of 100-byte messages: %v %v, want 8 9 10", seqs(res.Messages), err)
	}
	huge := strings.Repeat("y", 1000)
	publish(t, small, "t", huge)
	res, err = sp.subscribeN(t, "t", nil, 5)
	if err != nil || fmt.Sprint(seqs(res.Messages)) != "[11]" {
		t.Fatalf("history 5 whose newest message is over MaxReplyBytes: %v %v, want it alone", seqs(res.Messages), err)
	}
}

// TestHubHistory: the server reads a topic's last messages itself, with
// their positions; a topic the Hub does not hold has none (and its read
// does not keep it open), and a closed Hub says so.
func TestHubHistory(t *testing.T) {
	hub := &topic.Hub{Allow: topic.AllowAll}
	for i := 1; i <= 5; i++ {
		publish(t, hub, "t", i)
	}
	last, msgs, err := hub.History(testCtx(t), "t", 2)
	if err != nil || last.Seq != 5 || len(msgs) != 2 {
		t.Fatalf("History(t, 2) = %v, %v, %v", last, msgs, err)
	}
	for i, m := range msgs {
		if m.Topic != "t" || m.Epoch != last.Epoch || m.Seq != uint64(4+i) || string(m.Data) != fmt.Sprint(4+i) {
			t.Errorf("message %d = %+v", i, m)
		}
	}
	last, msgs, err = hub.History(testCtx(t), "never", 10)
	if err != nil || last.Seq != 0 || len(msgs) != 0 {
		t.Fatalf("History(never) = %v, %v, %v, want nothing", last, msgs, err)
	}
	if n := hub.Topics(); n != 1 {
		t.Errorf("%d topics open after reading one never published on, want 1", n)
	}
	if _, _, err := hub.History(testCtx(t), "", 1); err == nil {
		t.Error("History of an empty name succeeded")
	}
	hub.Close()
	if _, _, err := hub.History(testCtx(t), "t", 1); !errors.Is(err, topic.ErrClosed) {
		t.Errorf("History after Close = %v, want ErrClosed", err)
	}
}
