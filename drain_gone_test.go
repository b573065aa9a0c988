package jsonrpc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestCleanGoneWhilePushingBackDrains: a Peer that pushes back when its
// Conn says the remote side ended cleanly (a Pipe closed; a child process
// that exits with status 0) serves what it has read before it ends, within
// DrainTimeout, as it does after a clean io.EOF. On 3db20dd it ended at
// once: of 100 notifications written, 95 were handled with MaxQueuedBytes
// 2048 (100 with 4 MiB), Wait returned nil and nothing was logged.
func TestCleanGoneWhilePushingBackDrains(t *testing.T) {
	const n = 100
	var handled atomic.Int64
	h := mux(t, map[string]HandlerFunc{"n": func(ctx context.Context, req *Request) (any, error) {
		time.Sleep(time.Millisecond) // slower than the sender: the server pushes back
		handled.Add(1)
		return nil, nil
	}})
	c1, c2 := Pipe()
	server := NewPeer(c1, Options{Handler: h, MaxQueuedBytes: 2048})
	cleanupPeer(t, server)
	client := NewPeer(c2)
	ctx := testCtx(t, wait)
	for i := range n {
		if err := client.Notify(ctx, "n", []int{i}); err != nil {
			t.Fatalf("Notify %d: %v", i, err)
		}
	}
	client.Close() // a clean end, with the server pushing back
	within(t, server.Done(), "the server's end")
	if err := server.Wait(); err != nil {
		t.Errorf("Wait = %v, want nil: the other end closed cleanly", err)
	}
	if got := handled.Load(); got != n {
		t.Errorf("%d of %d notifications written were handled", got, n)
	}
}
