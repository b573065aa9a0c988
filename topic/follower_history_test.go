package topic_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"

	"github.com/peerwire/jsonrpc/topic"
)

// TestFollowerHistory (issue 31.10): a Follower with History N hands the
// application the last N messages on its first subscribe, through
// OnMessage, after an OnReset at the position before them and before
// every live message, each once and in order, while messages are
// published all along.
func TestFollowerHistory(t *testing.T) {
	hub := &topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	for i := 1; i <= 20; i++ {
		publish(t, hub, "t", i)
	}
	var mu sync.Mutex
	var got []uint64
	var resets []topic.Position
	f := &topic.Follower{History: 5,
		OnMessage: func(m topic.Message) { mu.Lock(); got = append(got, m.Seq); mu.Unlock() },
		OnReset:   func(_ string, at topic.Position) { mu.Lock(); resets = append(resets, at); mu.Unlock() },
	}
	site := newFollowerSite(hub, f)
	p := site.connect(t)
	var wg sync.WaitGroup
	wg.Go(func() { // published while the first subscribe is made
		for i := 21; i <= 120; i++ {
			publish(t, hub, "t", i)
		}
	})
	if err := f.Subscribe(testCtx(t), p, "t"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	deadline := testCtx(t)
	for {
		if pos, _ := f.Position("t"); pos.Seq == 120 {
			break
		}
		select {
		case <-deadline.Done():
			t.Fatal("the Follower did not reach seq 120")
		default:
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(resets) != 1 || len(got) == 0 || got[0] != resets[0].Seq+1 || resets[0].Seq < 15 {
		t.Fatalf("resets %v, messages from %v: want one reset, then the messages after it, with at least the 5 of the backlog", resets, got[:min(len(got), 3)])
	}
	for i, s := range got {
		if s != got[0]+uint64(i) {
			t.Fatalf("messages %v: not each once in order", got)
		}
	}
	if got[len(got)-1] != 120 {
		t.Fatalf("last message %d, want 120", got[len(got)-1])
	}
}

// TestFollowerHistoryAfterNewEpoch: a Follower that comes back to a
// server whose history has another epoch (a restart) gets the new
// epoch's backlog after its OnReset, as on its first subscribe.
func TestFollowerHistoryAfterNewEpoch(t *testing.T) {
	rec := newRecorder()
	f := rec.follower()
	f.History = 2
	old := &topic.Hub{Allow: topic.AllowAll}
	defer old.Close()
	publish(t, old, "t", 1)
	site := newFollowerSite(old, f)
	p := site.connect(t)
	if err := f.Subscribe(testCtx(t), p, "t"); err != nil {
		t.Fatal(err)
	}
	first := rec.await(t, 2)
	oldPos, _ := f.Position("t")
	if want := fmt.Sprintf("reset %s:0", oldPos.Epoch); first[0] != want {
		t.Fatalf("first subscribe: %v, want %s then the message", first, want)
	}
	restarted := &topic.Hub{Allow: topic.AllowAll}
	defer restarted.Close()
	var pos topic.Position
	for i := 1; i <= 3; i++ {
		pos = publish(t, restarted, "t", i)
	}
	p.Close()
	p = dial(t, restarted, site.cmux)
	if err := f.Resubscribe(testCtx(t), p); err != nil {
		t.Fatal(err)
	}
	ev := rec.await(t, 5)
	want := []string{fmt.Sprintf("reset %s:1", pos.Epoch), pos.Epoch + ":2", pos.Epoch + ":3"}
	if fmt.Sprint(ev[2:]) != fmt.Sprint(want) {
		t.Fatalf("after the restart: %v, want %v", ev[2:], want)
	}
}

// dial connects a client served by cmux to a server serving hub, for the
// test's length.
func dial(t testing.TB, hub *topic.Hub, cmux *jsonrpc.Mux) *jsonrpc.Peer {
	smux := jsonrpc.NewMux()
	hub.Register(smux)
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: cmux})
	t.Cleanup(func() { client.Close(); server.Close(); client.Wait(); server.Wait() })
	return client
}
