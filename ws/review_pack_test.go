//go:build !js

package ws_test

import (
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc/ws"
)

// TestPackNotificationsRespectsRemoteReadLimit: a client whose
// Conn.MaxMessageSize (64 KiB) takes every broadcast of about 1 KiB sent
// alone must take them all when the server packs them
// (PackNotifications: 256). The server cannot know the remote's limit: on
// 8d5742f it bounded a packed message by its own Conn's limit (32 MiB by
// default) and 1 MiB, and a packed array over the client's read limit
// ended the client's connection (1009) after 20 ticks; now a packed
// message is at most 16 KiB.
func TestPackNotificationsRespectsRemoteReadLimit(t *testing.T) {
	const (
		total = 2000
		pack  = 256
	)
	g, ts := packedGroupServer(t, total, pack)
	tk := &ticker{}
	client := ts.dial(t, tk.mux(t), &ws.DialOptions{Conn: ws.Options{MaxMessageSize: 64 << 10}})
	ts.nextPeer(t)
	pad := strings.Repeat("p", 1000) // each notification ~1 KiB, 1/64 of the client's limit
	for i := range total {
		must(t, g.Notify("tick", []any{i, pad}))
	}
	deadline := time.Now().Add(30 * time.Second)
	for tk.next.Load() < total && tk.badSeen.Load() == 0 && time.Now().Before(deadline) {
		select {
		case <-client.Done():
			t.Fatalf("the client's connection ended after %d of %d ticks: %v", tk.next.Load(), total, client.Wait())
		case <-time.After(time.Millisecond):
		}
	}
	if n := tk.next.Load(); n != total {
		t.Fatalf("the client got %d of %d ticks (bad %d)", n, total, tk.badSeen.Load())
	}
}
