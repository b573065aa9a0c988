package topic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peerwire/jsonrpc/topic"
)

// TestMemoryMaxAgeFreesIdleTopics (issue 30, finding 4): the history of
// topics that nobody reads or writes any more is freed once it is older
// than MaxAge, without waiting for another append or read: 40 topics of
// half a MiB each, idle past a 200 ms MaxAge, hold nothing a second later
// (on a fake clock).
func TestMemoryMaxAgeFreesIdleTopics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := &topic.Hub{Allow: allowAll, Store: &topic.Memory{MaxAge: 200 * time.Millisecond}}
		defer hub.Close()
		ctx := context.Background()
		data := json.RawMessage(`"` + strings.Repeat("x", 64<<10) + `"`)
		before := heapAfterGC()
		for i := range 40 {
			for range 8 {
				if _, err := hub.Publish(ctx, fmt.Sprint("idle-", i), data); err != nil {
					t.Fatal(err)
				}
			}
		}
		full := int64(heapAfterGC()) - int64(before)
		if full < 15<<20 {
			t.Fatalf("40 topics of half a MiB hold only %.1f MiB: the test measures nothing", float64(full)/(1<<20))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if held := int64(heapAfterGC()) - int64(before); held > 4<<20 {
			t.Fatalf("40 idle topics hold %.1f MiB (%.1f MiB at first) a second after their messages passed a 200 ms MaxAge",
				float64(held)/(1<<20), float64(full)/(1<<20))
		}
	})
}
