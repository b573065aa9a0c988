package topic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// pagedReply is a topic.subscribe result as it is on the wire.
type pagedReply struct {
	Epoch     string        `json:"epoch"`
	Seq       uint64        `json:"seq"`
	Recovered bool          `json:"recovered"`
	Messages  []topic.Entry `json:"messages"`
	More      bool          `json:"more"`
}

// fillHistory publishes n messages of size bytes on name and returns the
// epoch.
func fillHistory(t testing.TB, hub *topic.Hub, name string, n, size int) string {
	t.Helper()
	data := json.RawMessage(`"` + strings.Repeat("h", size-2) + `"`)
	var epoch string
	for range n {
		pos, err := hub.Publish(context.Background(), name, data)
		if err != nil {
			t.Fatal(err)
		}
		epoch = pos.Epoch
	}
	return epoch
}

// TestCatchUpReplyBounded (issue 30, finding 5): clients that ask for the
// whole history again and again and read nothing cannot make the server
// hold it once per call: each reply carries at most 64 KiB of messages
// (the rest comes in later pages), so 3 connections that sent 500
// subscribes since seq 0 each on a topic with 1 MB of history hold a
// bounded amount, about 12 MiB per connection where it was about 134
// (a fake clock and a Pipe: measured once every goroutine waits).
func TestCatchUpReplyBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := &topic.Hub{Allow: allowAll, Store: &topic.Memory{MaxBytes: 4 << 20}}
		defer hub.Close()
		epoch := fillHistory(t, hub, "board", 2000, 500)
		mux := jsonrpc.NewMux()
		hub.Register(mux)
		before := heapAfterGC()
		var ends []func()
		sent := make([]int, 3)
		for c := range 3 {
			a, b := jsonrpc.Pipe()
			server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux})
			ends = append(ends, func() { b.Close(); server.Wait() })
			go func() {
				for i := range 500 {
					req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"topic.subscribe","params":{"topic":"board","since":{"epoch":%q,"seq":0}}}`, i, epoch)
					sent[c] += len(req)
					if b.Write([]byte(req)) != nil {
						return
					}
				}
			}()
		}
		synctest.Wait() // every handler waits to write; nobody reads
		held := int64(heapAfterGC()) - int64(before)
		for _, end := range ends {
			end()
		}
		t.Logf("3 connections, %d KB of subscribes, nothing read: the server holds %.1f MiB", (sent[0]+sent[1]+sent[2])/1000, float64(held)/(1<<20))
		// Per connection: MaxOutboundBytes (4 MiB) of replies queued, and
		// MaxConcurrent (64) handlers each holding one encoded reply of
		// at most 64 KiB of messages (its buffer up to twice that).
		if held > 3*16<<20 {
			t.Fatalf("the server holds %.1f MiB for 3 connections that read nothing", float64(held)/(1<<20))
		}
	})
}

// TestCatchUpPaged: a catch-up longer than a reply may carry comes in
// pages of at most 64 KiB of messages (one message at least), each saying
// more until the last; a client that asks again from each page's seq gets
// every message once, in order.
func TestCatchUpPaged(t *testing.T) {
	hub := &topic.Hub{Allow: allowAll, Store: &topic.Memory{MaxBytes: 4 << 20}}
	defer hub.Close()
	epoch := fillHistory(t, hub, "board", 2000, 500)
	pr := newPair(t, hub)
	since := topic.Position{Epoch: epoch}
	pages := 0
	for next := uint64(1); ; pages++ {
		var r pagedReply
		if err := pr.client.Call(testCtx(t), topic.MethodSubscribe, topic.SubscribeParams{Topic: "board", Since: &since}, &r); err != nil {
			t.Fatal(err)
		}
		bytes := 0
		for _, e := range r.Messages {
			if e.Seq != next {
				t.Fatalf("page %d: seq %d, want %d", pages, e.Seq, next)
			}
			next++
			bytes += len(e.Data)
		}
		if !r.Recovered || len(r.Messages) == 0 && r.More || bytes > topic.DefaultMaxReplyBytes {
			t.Fatalf("page %d: recovered %v, %d messages, %d bytes, more %v", pages, r.Recovered, len(r.Messages), bytes, r.More)
		}
		if !r.More {
			if next != 2001 || r.Seq != 2000 {
				t.Fatalf("the last page ends at seq %d (reply seq %d), want 2000", next-1, r.Seq)
			}
			break
		}
		if r.Seq != next-1 {
			t.Fatalf("page %d says seq %d, its last message is %d", pages, r.Seq, next-1)
		}
		since.Seq = r.Seq
	}
	if pages < 10 {
		t.Fatalf("1 MB of history in %d pages", pages+1)
	}
}
