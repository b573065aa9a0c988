package topic_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// gatedStore is a Memory whose logs' Since waits until release is closed
// (or its ctx ends), announcing each wait on entered: a slow history (a
// JetStream catch-up, a busy server) as a subscribe sees it.
type gatedStore struct {
	topic.Memory
	entered chan string
	release chan struct{}
}

func (s *gatedStore) Open(ctx context.Context, name string, deliver func(topic.Position, json.RawMessage)) (topic.Log, error) {
	l, err := s.Memory.Open(ctx, name, deliver)
	return gatedLog{Log: l, s: s, name: name}, err
}

type gatedLog struct {
	topic.Log
	s    *gatedStore
	name string
}

func (l gatedLog) Since(ctx context.Context, since *topic.Position, limit topic.Limit) (topic.History, error) {
	select {
	case l.s.entered <- l.name:
	default:
	}
	select {
	case <-l.s.release:
	case <-ctx.Done():
	}
	return l.Log.Since(ctx, since, limit)
}

// TestFollowerUnsubscribeDuringSubscribeUnsubscribes: the Hub's doc says
// a client sends a topic's subscribe and unsubscribe one after the other's
// reply, "Follower and jsonrpc.js do", and the Hub makes an unsubscribe
// that overlaps a subscribe of the same topic a no-op (it replies true).
// But Follower.Unsubscribe does not wait for a Subscribe in flight: a
// Follower that unsubscribes while its subscribe is slow (a component
// unmounted, a Subscribe whose ctx ended) is told it unsubscribed, forgets
// the topic, and the server keeps it subscribed for the rest of the
// connection: every message is still sent (and dropped by the Follower),
// and the leaked topics count against MaxConnTopics, so the connection
// can no longer follow a topic it has room for.
func TestFollowerUnsubscribeDuringSubscribeUnsubscribes(t *testing.T) {
	st := &gatedStore{entered: make(chan string, 8), release: make(chan struct{})}
	hub := &topic.Hub{Allow: topic.AllowAll, Store: st, MaxConnTopics: 2}
	defer hub.Close()
	f := &topic.Follower{}
	smux, cmux := jsonrpc.NewMux(), jsonrpc.NewMux()
	hub.Register(smux)
	f.Register(cmux)
	var notes atomic.Int64 // topic.message notifications that reach the client's connection
	counting := jsonrpc.HandlerFunc(func(ctx context.Context, r *jsonrpc.Request) (any, error) {
		if r.Method == topic.MethodMessage {
			notes.Add(1)
		}
		return cmux.ServeRPC(ctx, r)
	})
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: counting})
	defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()

	subscribed := make(chan error, 2)
	for _, name := range []string{"a", "b"} {
		go func() { subscribed <- f.Subscribe(testCtx(t), client, name) }()
		select {
		case <-st.entered: // the server is reading the history for the reply
		case <-time.After(wait):
			t.Fatal("the subscribe never reached the history")
		}
		if err := f.Unsubscribe(testCtx(t), client, name); err != nil {
			t.Fatalf("Unsubscribe %q: %v", name, err)
		}
	}
	close(st.release)
	for range 2 {
		if err := <-subscribed; err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
	}
	// Every call has been answered: whatever the server keeps now, it
	// keeps for the connection's life.
	leaked := hub.Subscribers("a") + hub.Subscribers("b")
	const n = 5
	for i := range n {
		publish(t, hub, "a", i)
	}
	// A third topic: the Follower follows none, the connection may follow 2.
	errC := f.Subscribe(testCtx(t), client, "c")
	// Let the five notifications, if sent, arrive (they are ordered
	// before the reply of the subscribe above on this connection).
	deadline := time.Now().Add(2 * time.Second)
	for notes.Load() < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if leaked != 0 || notes.Load() != 0 || errC != nil {
		t.Fatalf("after Unsubscribe of a and b returned nil, with every call answered: the server keeps %d of 2 subscriptions, "+
			"sent %d of %d later messages of a to the connection, and Subscribe to a third topic (the Follower follows none, MaxConnTopics 2) got: %v",
			leaked, notes.Load(), n, errC)
	}
}
