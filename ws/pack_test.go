//go:build !js

package ws_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// TestGroupPackedOverWebSocket: with jsonrpc.Options.PackNotifications on
// the ws.Server, a Group's broadcasts reach a ws.Dial Peer every one, in
// order, and a raw client sees some of them packed in arrays of at most
// PackNotifications, every message valid for the other's read limit.
func TestGroupPackedOverWebSocket(t *testing.T) {
	const (
		total = 2000
		pack  = 16
	)
	g, ts := packedGroupServer(t, total, pack)
	tk := &ticker{}
	ts.dial(t, tk.mux(t), nil)
	ts.nextPeer(t)
	raw := ts.rawDial(t, nil)
	ts.nextPeer(t)
	var arrays, elems, largest atomic.Int64
	rawDone := make(chan struct{})
	go func() {
		defer close(rawDone)
		for elems.Load() < total {
			_, msg, err := raw.Read(context.Background())
			if err != nil {
				return
			}
			n := int64(bytes.Count(msg, []byte(`"method":"tick"`)))
			if msg[0] == '[' {
				arrays.Add(1)
				largest.Store(max(largest.Load(), n))
			}
			elems.Add(n)
		}
	}()
	pad := strings.Repeat("p", 100)
	for i := range total {
		must(t, g.Notify("tick", []any{i, pad}))
	}
	deadline := time.Now().Add(30 * time.Second) // generous: 2,000 ticks took 1.8 s under -race on a loaded machine
	for tk.next.Load() < total && tk.badSeen.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if bad := tk.badSeen.Load(); bad != 0 {
		t.Fatalf("the Peer got tick %d out of order", bad-1)
	}
	if n := tk.next.Load(); n != total {
		t.Fatalf("the Peer got %d of %d ticks", n, total)
	}
	select {
	case <-rawDone:
	case <-time.After(30 * time.Second):
		t.Fatalf("the raw client got %d of %d ticks", elems.Load(), total)
	}
	if elems.Load() != total {
		t.Fatalf("the raw client got %d of %d ticks", elems.Load(), total)
	}
	if arrays.Load() == 0 || largest.Load() > pack {
		t.Fatalf("%d arrays, the largest of %d elements; want some, of at most %d", arrays.Load(), largest.Load(), pack)
	}
	t.Logf("%d ticks in %d arrays (the largest of %d) and single messages", total, arrays.Load(), largest.Load())
}

// packedGroupServer starts a ws.Server whose Peers pack up to pack queued
// notifications and join g, a Group that queues up to total of them.
func packedGroupServer(t *testing.T, total, pack int) (*jsonrpc.Group, *testServer) {
	t.Helper()
	g := &jsonrpc.Group{MaxQueue: total}
	ts := startServer(t, &ws.Server{
		Peer:      jsonrpc.Options{PackNotifications: pack},
		OnConnect: func(p *jsonrpc.Peer, _ *http.Request) { g.Add(p) },
	}, nil)
	return g, ts
}
