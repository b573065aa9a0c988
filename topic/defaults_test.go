package topic_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// allowAll lets every topic through (topic.AllowAll, written out so that
// these tests also build against a Hub that had no AllowAll).
func allowAll(context.Context, string) error { return nil }

// rpcCode returns the code of the *jsonrpc.Error in err, or 0.
func rpcCode(err error) int64 {
	if e, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return e.Code
	}
	return 0
}

// heapAfterGC returns the live heap, in bytes, after a collection.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// lightPair is a client Peer over a Pipe to a server Peer serving hub,
// with nothing kept of what the client gets: close ends both.
func lightPair(hub *topic.Hub) (client *jsonrpc.Peer, close func()) {
	mux := jsonrpc.NewMux()
	hub.Register(mux)
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux})
	client = jsonrpc.NewPeer(b)
	return client, func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	}
}

// subscribeOn calls topic.subscribe on p.
func subscribeOn(ctx context.Context, p *jsonrpc.Peer, name string) error {
	return p.Call(ctx, topic.MethodSubscribe, topic.SubscribeParams{Topic: name}, nil)
}

// TestDefaultHubRefusesEveryTopic (issue 30, finding 1): the zero Hub lets
// no client read any topic: a second client asking for "user:alice" gets
// CodeNoSuchTopic, none of its history and none of its live messages.
func TestDefaultHubRefusesEveryTopic(t *testing.T) {
	var hub topic.Hub
	defer hub.Close()
	var epoch string
	for i := 1; i <= 3; i++ {
		epoch = publish(t, &hub, "user:alice", fmt.Sprintf("secret %d", i)).Epoch
	}
	pr := newPair(t, &hub)
	res, err := pr.subscribe(t, "user:alice", &topic.Position{Epoch: epoch})
	if rpcCode(err) != topic.CodeNoSuchTopic {
		t.Fatalf("subscribe to another user's topic on the zero Hub: %v, %d messages; want CodeNoSuchTopic", err, len(res.Messages))
	}
	publish(t, &hub, "user:alice", "secret 4")
	select {
	case m := <-pr.live:
		t.Fatalf("a refused client got a live message: %+v", m)
	case <-time.After(50 * time.Millisecond):
	}
	if n := hub.Subscribers("user:alice"); n != 0 {
		t.Fatalf("%d subscribers after a refused subscribe", n)
	}
}

// TestSubscribesOpenBoundedTopics (issue 30, finding 2): one connection
// cannot follow more than 128 topics (CodeTooManyTopics), the Hub holds
// at most 10,000 open at once (beyond: CodeOverloaded), and what
// connections opened is released after they leave: 20,000 topics opened
// and left, 100 at a time, leave the heap where it was once the minute's
// grace has passed (on a fake clock), with nothing else happening.
func TestSubscribesOpenBoundedTopics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := &topic.Hub{Allow: allowAll}
		defer hub.Close()
		ctx := context.Background()
		name := func(i int) string { return fmt.Sprintf("t%06d-%s", i, strings.Repeat("x", 100)) }

		p, closePair := lightPair(hub)
		refused := 0
		for i := range 200 {
			if err := subscribeOn(ctx, p, name(i)); rpcCode(err) == topic.CodeTooManyTopics {
				refused++
			} else if err != nil {
				t.Fatalf("subscribe %d: %v", i, err)
			}
		}
		closePair()
		if refused != 200-128 {
			t.Fatalf("one connection followed %d of 200 topics, want 128", 200-refused)
		}

		before := heapAfterGC()
		for c := range 200 {
			p, closePair := lightPair(hub)
			for i := range 100 {
				if err := subscribeOn(ctx, p, name(1000+c*100+i)); err != nil {
					t.Fatalf("connection %d, subscribe %d: %v", c, i, err)
				}
			}
			closePair()
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		grown := int64(heapAfterGC()) - int64(before)
		t.Logf("20,000 topics opened by connections that left: heap %+.2f MiB two minutes later", float64(grown)/(1<<20))
		if grown >= 4<<20 {
			t.Fatalf("20,000 topics opened by connections that left still hold %.1f MiB", float64(grown)/(1<<20))
		}

		var first *jsonrpc.Peer
		for c := range 100 { // 10,000 topics followed at once
			p, closePair := lightPair(hub)
			defer closePair()
			if first == nil {
				first = p
			}
			for i := range 100 {
				if err := subscribeOn(ctx, p, name(100000+c*100+i)); err != nil {
					t.Fatalf("connection %d, subscribe %d: %v", c, i, err)
				}
			}
		}
		if err := subscribeOn(ctx, first, "one more"); rpcCode(err) != jsonrpc.CodeOverloaded {
			t.Fatalf("a subscribe beyond 10,000 open topics: %v, want CodeOverloaded", err)
		}
		if err := subscribeOn(ctx, first, name(100000)); err != nil {
			t.Fatalf("a subscribe to an open topic while full: %v", err)
		}
	})
}

// TestTopicNameBounded (issue 30, finding 3): a name over 256 bytes (or
// empty) is refused with -32602 before anything is opened, and Publish
// refuses it too.
func TestTopicNameBounded(t *testing.T) {
	hub := &topic.Hub{Allow: allowAll}
	defer hub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // 10 MiB of names to decode, under -race
	defer cancel()
	before := heapAfterGC()
	p, closePair := lightPair(hub)
	for i := range 10 {
		if err := subscribeOn(ctx, p, fmt.Sprint(i)+strings.Repeat("n", 1<<20)); rpcCode(err) != jsonrpc.CodeInvalidParams {
			t.Fatalf("subscribe with a 1 MiB name: %v, want -32602", err)
		}
	}
	closePair()
	if grown := int64(heapAfterGC()) - int64(before); grown > 4<<20 {
		t.Fatalf("10 subscribes with 1 MiB names hold %.1f MiB after their connection ended", float64(grown)/(1<<20))
	}
	pr := newPair(t, hub)
	if _, err := pr.subscribe(t, strings.Repeat("n", 257), nil); rpcCode(err) != jsonrpc.CodeInvalidParams {
		t.Fatalf("subscribe with a 257-byte name: %v, want -32602", err)
	}
	if _, err := pr.subscribe(t, strings.Repeat("n", 256), nil); err != nil {
		t.Fatalf("subscribe with a 256-byte name: %v", err)
	}
	if _, err := hub.Publish(testCtx(t), strings.Repeat("n", 257), 1); err == nil {
		t.Fatal("Publish on a 257-byte name succeeded")
	}
}
