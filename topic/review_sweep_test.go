package topic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// idleCounting is a Memory whose logs count the calls of Idle, which the
// Hub makes with its lock held.
type idleCounting struct {
	topic.Memory
	idle atomic.Int64
}

func (s *idleCounting) Open(ctx context.Context, name string, deliver func(topic.Position, json.RawMessage)) (topic.Log, error) {
	l, err := s.Memory.Open(ctx, name, deliver)
	return idleLog{Log: l, n: &s.idle}, err
}

type idleLog struct {
	topic.Log
	n *atomic.Int64
}

func (l idleLog) Idle() bool { l.n.Add(1); return l.Log.Idle() }

// TestRefusedSubscribesAtMaxTopicsCostBounded: when MaxTopics are open
// and the quiet ones still hold history (a server that published to many
// topics: per-user notifications), every subscribe to a topic not open
// (one the client is allowed, its own) sweeps every quiet topic under the
// Hub's lock, calling Idle on each (which takes the log's lock and trims
// it), only to be refused with -32000 and to sweep them all again on the
// next: one client's refused subscribes cost the server O(MaxTopics) each,
// under the lock every Publish and subscribe of every topic needs.
func TestRefusedSubscribesAtMaxTopicsCostBounded(t *testing.T) {
	const maxTopics, subscribes = 2000, 200
	st := &idleCounting{}
	hub := &topic.Hub{Allow: func(_ context.Context, name string) error {
		if name == "user:mallory" {
			return nil
		}
		return topic.ErrNoSuchTopic
	}, Store: st, MaxTopics: maxTopics}
	defer hub.Close()
	for i := range maxTopics { // the server's own topics, each with a message in its history
		publish(t, hub, fmt.Sprintf("user:%d", i), i)
	}
	client, end := lightPair(hub)
	defer end()
	before := st.idle.Load()
	refused := 0
	for range subscribes {
		err := subscribeOn(testCtx(t), client, "user:mallory")
		if rpcCode(err) == jsonrpc.CodeOverloaded {
			refused++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	calls := st.idle.Load() - before
	t.Logf("%d subscribes (%d refused with -32000): %d Idle calls under the Hub's lock", subscribes, refused, calls)
	if calls > 10*maxTopics {
		t.Fatalf("%d subscribes of one allowed topic at MaxTopics (%d refused) made %d Log.Idle calls under the Hub's lock (%d per subscribe)",
			subscribes, refused, calls, calls/subscribes)
	}
}
