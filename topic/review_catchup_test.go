package topic_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"testing/synctest"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// liveHeap is /gc/heap/live:bytes after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestCatchUpOfBigMessagesBounded: the README says a catch-up comes in
// pages of at most 64 KiB of messages, so that three connections asking
// for history again and again and reading nothing make the server hold
// "about 36 MiB" (TestCatchUpReplyBounded, 500-byte messages). But a
// reply carries at least one message whatever its size, and every one of
// a connection's 64 concurrent handlers holds its encoded reply while it
// waits for room to write: on a default Hub (Memory: 1 MiB per topic)
// whose topic holds one message of 300,000 bytes, one connection that
// sends 100 subscribes (13 KB) makes the server hold some 64 encoded
// replies of it (MaxConcurrent), each in a buffer of up to twice its
// size: 40 MiB measured (126 MiB with one 1 MB message). The cost of a
// connection's subscribes is bounded by the largest message, not by
// MaxReplyBytes. Since Hub.MaxConnReplyBytes (1 MiB by default) counts
// each reply before it is built until it is queued for writing, the same
// connection makes the server hold 1.0 MiB (3.0 MiB with a 1 MB message
// and a 4 MiB Memory), measured on review-rt.
func TestCatchUpOfBigMessagesBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := &topic.Hub{Allow: allowAll} // the default Store: Memory, 1 MiB per topic
		defer hub.Close()
		epoch := fillHistory(t, hub, "board", 1, 300_000)
		mux := jsonrpc.NewMux()
		hub.Register(mux)
		before := liveHeap()
		var ends []func()
		const conns = 1
		sent := make([]int, conns)
		for c := range conns {
			a, b := jsonrpc.Pipe()
			server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux})
			ends = append(ends, func() { b.Close(); server.Wait() })
			go func() {
				for i := range 100 {
					req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"topic.subscribe","params":{"topic":"board","since":{"epoch":%q,"seq":0}}}`, i, epoch)
					sent[c] += len(req)
					if b.Write([]byte(req)) != nil {
						return
					}
				}
			}()
		}
		synctest.Wait() // every handler waits to write; nobody reads
		held := int64(liveHeap()) - int64(before)
		t.Logf("%d connection, %d KB of topic.subscribe, nothing read: the server holds %.1f MiB", conns, sent[0]/1000, float64(held)/(1<<20))
		for _, end := range ends {
			end()
		}
		// The README's figure is about 12 MiB per connection;
		// TestCatchUpReplyBounded allows 16 MiB per connection.
		if held > conns*16<<20 {
			t.Fatalf("%d connection that sent %d KB of topic.subscribe and read nothing makes the server hold %.1f MiB (a history of one 300 KB message)",
				conns, sent[0]/1000, float64(held)/(1<<20))
		}
	})
}
