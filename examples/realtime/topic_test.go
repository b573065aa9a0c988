package main

import (
	"encoding/json"
	"errors"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// subscribeBoard subscribes pg to the topic "board", since pos if not nil.
func subscribeBoard(t *testing.T, pg *page, since *topic.Position) topic.SubscribeResult {
	t.Helper()
	var res topic.SubscribeResult
	if err := pg.Call(t.Context(), topic.MethodSubscribe, topic.SubscribeParams{Topic: "board", Since: since}, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// newsOf decodes a message of the topic "board".
func newsOf(t *testing.T, data json.RawMessage) (method string, note Note) {
	t.Helper()
	var n struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(data, &n); err != nil {
		t.Fatalf("news %s: %v", data, err)
	}
	if n.Method == "board.posted" || n.Method == "board.liked" {
		json.Unmarshal(n.Params, &note)
	}
	return n.Method, note
}

// liveUntil reads pg's live topic messages until one is method about a
// note with text, checking that seqs follow each other from pos, and
// returns the position reached. It drops what the subscribe reply had.
func liveUntil(t *testing.T, pg *page, pos topic.Position, method, text string) topic.Position {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-pg.topic:
			if m.Epoch == pos.Epoch && m.Seq <= pos.Seq {
				continue // also in the subscribe reply
			}
			if m.Epoch != pos.Epoch || m.Seq != pos.Seq+1 {
				t.Fatalf("live message at %s:%d after %s:%d", m.Epoch, m.Seq, pos.Epoch, pos.Seq)
			}
			pos.Seq = m.Seq
			if got, note := newsOf(t, m.Data); got == method && note.Text == text {
				return pos
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %s %q on the topic", method, text)
		}
	}
}

// TestBoardTopic: a page subscribed to the topic "board" gets the board's
// news as topic messages, in seq order, and no longer as plain
// notifications; offline, it misses a post and a like, and on coming back
// with its position it gets exactly those, from the history, with no need
// to fetch the board. Another topic is refused; unsubscribed, the page
// gets the plain notifications again.
func TestBoardTopic(t *testing.T) {
	base := startServer(t)
	alice := dialPage(t, base, "alice", "alice")
	bob := dialPage(t, base, "bob", "bob")
	res := subscribeBoard(t, alice, nil)
	if res.Recovered || len(res.Messages) != 0 || res.Epoch == "" {
		t.Fatalf("first subscribe: %+v", res)
	}
	pos := topic.Position{Epoch: res.Epoch, Seq: res.Seq}
	var one Note
	if err := bob.Call(t.Context(), "board.post", map[string]string{"text": "one"}, &one); err != nil {
		t.Fatal(err)
	}
	pos = liveUntil(t, alice, pos, "board.posted", "one")
	if len(alice.posted) != 0 {
		t.Fatal("a subscribed page got the plain board.posted too")
	}
	if got := next(t, bob.posted, "the plain notification"); !reflect.DeepEqual(got, one) {
		t.Fatalf("the page that did not subscribe got %+v", got)
	}

	alice.Close()
	alice.Wait()
	var two Note
	if err := bob.Call(t.Context(), "board.post", map[string]string{"text": "two"}, &two); err != nil {
		t.Fatal(err)
	}
	if err := bob.Call(t.Context(), "board.like", map[string]int64{"id": one.ID}, nil); err != nil {
		t.Fatal(err)
	}
	// The like is announced once the call returns; its stats may follow.
	back := dialPage(t, base, "alice", "alice")
	var res2 topic.SubscribeResult
	deadline := time.Now().Add(10 * time.Second)
	for {
		res2 = subscribeBoard(t, back, &pos)
		if !res2.Recovered {
			t.Fatalf("back within the history: %+v", res2)
		}
		if hasLike(t, res2.Messages) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var methods []string
	for i, e := range res2.Messages {
		if e.Seq != pos.Seq+1+uint64(i) {
			t.Fatalf("recovered seqs not dense from %d: %d at %d", pos.Seq+1, e.Seq, i)
		}
		method, note := newsOf(t, e.Data)
		if method != "board.stats" {
			methods = append(methods, method+" "+note.Text)
		}
	}
	if got := methods; len(got) != 2 || got[0] != "board.posted two" || got[1] != "board.liked one" {
		t.Fatalf("recovered %v, want the post of two and the like of one", got)
	}

	err := back.Call(t.Context(), topic.MethodSubscribe, topic.SubscribeParams{Topic: "elsewhere"}, nil)
	if e, ok := errors.AsType[*jsonrpc.Error](err); !ok || e.Code != topic.CodeNoSuchTopic {
		t.Fatalf("subscribe to another topic: %v", err)
	}
	// Unsubscribed, the page gets the plain notifications again.
	if err := back.Call(t.Context(), topic.MethodUnsubscribe, topic.UnsubscribeParams{Topic: "board"}, nil); err != nil {
		t.Fatal(err)
	}
	var three Note
	if err := bob.Call(t.Context(), "board.post", map[string]string{"text": "three"}, &three); err != nil {
		t.Fatal(err)
	}
	if got := next(t, back.posted, "the plain notification after unsubscribing"); !reflect.DeepEqual(got, three) {
		t.Fatalf("after unsubscribing: %+v, want %+v", got, three)
	}
}

func hasLike(t *testing.T, es []topic.Entry) bool {
	for _, e := range es {
		if m, _ := newsOf(t, e.Data); m == "board.liked" {
			return true
		}
	}
	return false
}

// TestClusterTopicCatchUp: three nodes on one NATS. A page subscribed on
// node 2 loses it (node 2 stops); meanwhile a post and a like are made on
// node 3; the page comes back to node 2, restarted, with its position, and
// gets exactly those from the topic's history in JetStream; a page that
// reconnects to node 1 with the same position gets the same messages.
func TestClusterTopicCatchUp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the demo and runs four processes")
	}
	bin := buildDemo(t)
	natsURL, nodes := startCluster(t, bin, 3)
	alice := dialPage(t, nodes[1].url, "alice", "alice")
	var res topic.SubscribeResult
	waitFor := time.Now().Add(20 * time.Second)
	for { // the node opens the topic's stream on first use: NATS may be on its way
		err := alice.Call(t.Context(), topic.MethodSubscribe, topic.SubscribeParams{Topic: "board"}, &res)
		if err == nil {
			break
		}
		if time.Now().After(waitFor) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	pos := topic.Position{Epoch: res.Epoch, Seq: res.Seq}
	carol := dialPage(t, nodes[2].url, "carol", "carol")
	one, _ := retryPost(t, carol, "one", 20*time.Second)
	pos = liveUntil(t, alice, pos, "board.posted", "one")

	nodes[1].stop(t, syscall.SIGTERM)
	var two Note
	if err := carol.Call(t.Context(), "board.post", map[string]string{"text": "two"}, &two); err != nil {
		t.Fatal(err)
	}
	if err := carol.Call(t.Context(), "board.like", map[string]int64{"id": one.ID}, nil); err != nil {
		t.Fatal(err)
	}
	n2 := startNode(t, bin, "n2-again", "-nats", natsURL)
	for _, base := range []string{n2.url, nodes[0].url} {
		back := dialPage(t, base, "alice", "alice")
		var got []string
		waitFor := time.Now().Add(10 * time.Second)
		for {
			res := subscribeBoard(t, back, &pos)
			if !res.Recovered || res.Epoch != pos.Epoch {
				t.Fatalf("back on %s: %+v", base, res)
			}
			got = got[:0]
			for i, e := range res.Messages {
				if e.Seq != pos.Seq+1+uint64(i) {
					t.Fatalf("recovered seqs not dense from %d: %d at %d", pos.Seq+1, e.Seq, i)
				}
				if method, note := newsOf(t, e.Data); method != "board.stats" {
					got = append(got, method+" "+note.Text)
				}
			}
			if len(got) >= 2 || time.Now().After(waitFor) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(got) != 2 || got[0] != "board.posted two" || got[1] != "board.liked one" {
			t.Fatalf("back on %s: recovered %v, want the post of two and the like of one", base, got)
		}
	}
}
