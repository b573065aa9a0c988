package topic_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peerwire/jsonrpc/topic"
)

// TestQuietTopicsReleased: a topic nobody follows is released once its
// history is empty, so that topics published on long ago do not fill
// MaxTopics: with 10 of 10 taken by topics whose history has aged out, a
// subscribe to an 11th succeeds, and a topic still holding history is
// kept for the clients that may come back to it.
func TestQuietTopicsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := &topic.Hub{Allow: allowAll, MaxTopics: 10, Store: &topic.Memory{MaxAge: time.Minute}}
		defer hub.Close()
		ctx := context.Background()
		for i := range 10 {
			if _, err := hub.Publish(ctx, fmt.Sprint("old-", i), i); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := hub.Publish(ctx, "one too many", 1); err == nil {
			t.Fatal("Publish on an 11th topic while 10 hold history succeeded")
		}
		time.Sleep(2 * time.Minute)
		kept, err := hub.Publish(ctx, "kept", 1) // 10 released to make room
		if err != nil {
			t.Fatalf("Publish on an 11th topic after the others' history aged out: %v", err)
		}
		if n := hub.Topics(); n > 10 {
			t.Fatalf("%d topics open, over MaxTopics", n)
		}
		time.Sleep(30 * time.Second)
		pr := newPair(t, hub)
		res, err := pr.subscribe(t, "kept", &topic.Position{Epoch: kept.Epoch})
		if err != nil || !res.Recovered || len(res.Messages) != 1 {
			t.Fatalf("a topic with history, nobody following it: %+v, %v; want its message recovered", res, err)
		}
		pr.client.Close()
		pr.server.Wait()
	})
}
