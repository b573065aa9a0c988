package jsonrpc

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestGroupNotifyOrderedWithPeerNotify: a server that broadcasts through a
// Group and then, on the same goroutine, sends its own Notify to a member
// (a "snapshot" after the "updates", say) expects the member to see them
// in that order: Options.PackNotifications' doc says everything the Peer
// sends keeps "the order it was queued". The member records what arrives.
func TestGroupNotifyOrderedWithPeerNotify(t *testing.T) {
	for _, pack := range []int{0, 16} {
		t.Run(map[int]string{0: "unpacked", 16: "packed"}[pack], func(t *testing.T) {
			const total = 1000
			c1, c2 := Pipe()
			var mu sync.Mutex
			var got []int
			done := make(chan struct{})
			mux := NewMux()
			Register(mux, "n", func(_ context.Context, x []int) (any, error) {
				mu.Lock()
				got = append(got, x[0])
				if len(got) == 2*total {
					close(done)
				}
				mu.Unlock()
				return nil, nil
			})
			cli := NewPeer(c1, Options{Handler: mux})
			srv := NewPeer(c2, Options{PackNotifications: pack})
			defer func() { cli.Close(); srv.Close(); cli.Wait(); srv.Wait() }()
			g := &Group{MaxQueue: 2 * total}
			g.Add(srv)
			for i := range total {
				if err := g.Notify("n", []int{2 * i}); err != nil {
					t.Fatal(err)
				}
				if err := srv.Notify(context.Background(), "n", []int{2*i + 1}); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("got %d of %d notifications", len(got), 2*total)
			}
			mu.Lock()
			defer mu.Unlock()
			swaps := 0
			first := -1
			for i := 1; i < len(got); i++ {
				if got[i] < got[i-1] {
					swaps++
					if first < 0 {
						first = i
					}
				}
			}
			if swaps > 0 {
				t.Fatalf("%d of %d notifications arrived before one queued earlier (first at %d: %v)", swaps, 2*total, first, got[max(0, first-3):min(len(got), first+3)])
			}
		})
	}
}
