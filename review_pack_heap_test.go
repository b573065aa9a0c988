package jsonrpc

import (
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// TestPackedBroadcastKeepsNoCopyPerMember: a Group's queued broadcasts
// are shared by its members (one encoded message for all), so a burst
// costs its own bytes once however many members lag. With
// PackNotifications each lagging member gets its queue copied into a
// packed message of its own (up to 1 MiB then), kept until the member reads it:
// 200 members a message behind (each read the first broadcast, then
// stalls) hold the 1 MiB burst 200 times over. The test measures the live
// heap with packing off and on and wants the packed figure within a packed
// message and the Pipe's copy of it (2 x 16 KiB) a member of the unpacked one. (A Pipe copies each message it carries
// until it is read, so about half of the packed figure is the Pipe's copy;
// over WebSocket the packed buffer alone would stay, up to 1 MiB a member
// whose socket buffers are full: reasoned from outbox.flush, not measured.)
func TestPackedBroadcastKeepsNoCopyPerMember(t *testing.T) {
	const (
		members = 200
		burst   = 256
	)
	live := func() int64 {
		runtime.GC()
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return int64(s[0].Value.Uint64())
	}
	heldBy := func(pack int) int64 {
		g := &Group{MaxQueue: 2 * burst}
		var remotes []Conn
		var peers []*Peer
		for range members {
			c1, c2 := Pipe()
			remotes = append(remotes, c1)
			p := NewPeer(c2, Options{PackNotifications: pack})
			peers = append(peers, p)
			g.Add(p)
		}
		defer func() {
			for _, p := range peers {
				p.Close()
			}
			for _, p := range peers {
				p.Wait()
			}
		}()
		before := live()
		pad := strings.Repeat("x", 4000)
		for range burst + 1 { // 1 MiB, and the first
			if err := g.Notify("n", []string{pad}); err != nil {
				t.Fatal(err)
			}
		}
		// Each member reads the first broadcast only: its writer then
		// takes what is queued, packed or one by one, and waits for a
		// reader that does not come.
		for _, c := range remotes {
			if _, err := c.Read(); err != nil {
				t.Fatal(err)
			}
		}
		// The writers take what is queued: a packed message, or the next
		// one, unpacked.
		taken := func() bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, o := range g.members {
				// Packed: at least one packed message (two or more)
				// taken; how many depends on the pack's byte bound.
				if n := o.len(); pack > 0 && n > burst-2 || pack == 0 && n > burst-1 {
					return false
				}
			}
			return true
		}
		for deadline := time.Now().Add(20 * time.Second); !taken() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if !taken() {
			t.Fatalf("PackNotifications %d: the members' writers did not take their queues in 20 s", pack)
		}
		held := live() - before
		t.Logf("PackNotifications %d: %d bytes held for a 1 MiB burst to %d lagging members (%d a member)", pack, held, members, held/members)
		return held
	}
	off := heldBy(0)
	on := heldBy(burst)
	// A packed message is at most maxPackBytes (16 KiB), kept by the
	// member's writer, and the Pipe holds its copy until read: at most
	// twice that a member beyond the unpacked figure (measured: 18,266
	// bytes a member unpacked, 46,335 packed; 2.1 MB a member when a
	// packed message could take 1 MiB).
	if on > off+members*2*maxPackBytes {
		t.Fatalf("a 1 MiB burst to %d lagging members holds %d MiB packed against %d MiB unpacked", members, on>>20, off>>20)
	}
}
