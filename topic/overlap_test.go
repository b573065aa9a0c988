package topic_test

import (
	"context"
	"encoding/json"
	"github.com/peerwire/jsonrpc"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc/topic"
)

// heldStore is a Memory whose logs' Since waits, while hold is set, until
// the test lets it go: a subscribe held between adding its subscriber and
// replying.
type heldStore struct {
	topic.Memory
	entered chan struct{} // a Since is waiting
	proceed chan struct{} // let it go
}

func (s *heldStore) Open(ctx context.Context, name string, deliver func(topic.Position, json.RawMessage)) (topic.Log, error) {
	l, err := s.Memory.Open(ctx, name, deliver)
	return heldLog{Log: l, s: s}, err
}

type heldLog struct {
	topic.Log
	s *heldStore
}

func (l heldLog) Since(ctx context.Context, since *topic.Position, limit topic.Limit) (topic.History, error) {
	l.s.entered <- struct{}{}
	<-l.s.proceed
	return l.Log.Since(ctx, since, limit)
}

// TestUnsubscribeDuringSubscribeTakesEffectAfterIt: a topic.unsubscribe
// that the server runs while a topic.subscribe of the same topic on the
// same connection is still in progress answers true and takes effect
// once that subscribe ends: the subscribe replies success, and then the
// connection no longer follows the topic (it kept it, answering true, on
// cbdc8d1: review-rt's finding 1). A subscribe that joins after the
// unsubscribe, while the first is still in progress, holds: the last to
// reach the server wins, and a success is not undone by an unsubscribe
// that came before it (issue 30, finding 6).
func TestUnsubscribeDuringSubscribeTakesEffectAfterIt(t *testing.T) {
	st := &heldStore{entered: make(chan struct{}), proceed: make(chan struct{})}
	hub := &topic.Hub{Allow: allowAll, Store: st}
	defer hub.Close()
	pr := newPair(t, hub)
	subscribeHeld := func() chan error {
		subscribed := make(chan error, 1)
		go func() {
			_, err := pr.subscribe(t, "t", nil)
			subscribed <- err
		}()
		<-st.entered // the subscriber is added; its reply not yet made
		return subscribed
	}
	unsubscribe := func() {
		t.Helper()
		var ok bool
		if err := pr.client.Call(testCtx(t), topic.MethodUnsubscribe, topic.UnsubscribeParams{Topic: "t"}, &ok); err != nil || !ok {
			t.Fatalf("topic.unsubscribe: %v, %v", ok, err)
		}
	}

	first := subscribeHeld()
	unsubscribe()
	if n := hub.Subscribers("t"); n != 1 {
		t.Fatalf("%d subscribers while the subscribe is in progress, want 1", n)
	}
	second := subscribeHeld() // after the unsubscribe: it holds
	close(st.proceed)
	for _, c := range []chan error{first, second} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	publish(t, hub, "t", "after")
	if m := pr.next(t); m.Seq != 1 {
		t.Fatalf("live %+v, want seq 1", m)
	}

	// Without the second subscribe, the unsubscribe takes effect once
	// the subscribe in progress has replied.
	st.proceed = make(chan struct{})
	unsubscribe()
	third := subscribeHeld()
	unsubscribe()
	close(st.proceed)
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	if n := hub.Subscribers("t"); n != 0 {
		t.Fatalf("%d subscribers once the subscribe that the unsubscribe overlapped has replied, want 0", n)
	}
	publish(t, hub, "t", "gone")
	select {
	case m := <-pr.live:
		t.Fatalf("live %+v after the unsubscribe took effect", m)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestFollowerSubscribeWaitsForUnsubscribe (issue 30, finding 6, the
// client's side): a Follower does not send a topic's topic.subscribe while
// its topic.unsubscribe is in flight (the server would run both at once,
// in either order), but after its reply.
func TestFollowerSubscribeWaitsForUnsubscribe(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	record := func(s string) {
		mu.Lock()
		calls = append(calls, s)
		mu.Unlock()
	}
	release := make(chan struct{})
	smux := jsonrpc.NewMux()
	jsonrpc.Register(smux, topic.MethodSubscribe, func(_ context.Context, p topic.SubscribeParams) (topic.SubscribeResult, error) {
		record("subscribe")
		return topic.SubscribeResult{Topic: p.Topic, Epoch: "E", Messages: []topic.Entry{}}, nil
	})
	unsubscribing := make(chan struct{})
	jsonrpc.Register(smux, topic.MethodUnsubscribe, func(context.Context, topic.UnsubscribeParams) (bool, error) {
		record("unsubscribe")
		close(unsubscribing)
		<-release
		record("unsubscribed")
		return true, nil
	})
	f := &topic.Follower{}
	fmux := jsonrpc.NewMux()
	f.Register(fmux)
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: fmux})
	defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
	if err := f.Subscribe(testCtx(t), client, "t"); err != nil {
		t.Fatal(err)
	}
	unsubscribed := make(chan error, 1)
	go func() { unsubscribed <- f.Unsubscribe(testCtx(t), client, "t") }()
	<-unsubscribing
	subscribed := make(chan error, 1)
	go func() { subscribed <- f.Subscribe(testCtx(t), client, "t") }()
	time.Sleep(50 * time.Millisecond) // a subscribe sent now would reach the server
	close(release)
	if err := <-unsubscribed; err != nil {
		t.Fatal(err)
	}
	if err := <-subscribed; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(calls, " "); got != "subscribe unsubscribe unsubscribed subscribe" {
		t.Fatalf("the server saw %s, want the second subscribe after the unsubscribe's reply", got)
	}
}
