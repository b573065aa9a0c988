package jsonrpc

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestCallCtxBoundsBlockedWrite pins issue 9's finding 2: Call and Notify
// gave the Conn the Peer's lifetime ctx, so once a write had started, a
// remote side that does not read held them past their own ctx (a 100 ms
// Call was still blocked after 2 s). Now a writer owns the Conn and the
// caller leaves when its ctx ends: a message still queued is withdrawn, one
// being written is left to the writer.
func TestCallCtxBoundsBlockedWrite(t *testing.T) {
	c1, c2 := Pipe() // nobody reads c2: every write to it blocks
	p := NewPeer(c1)
	cleanupPeer(t, p)
	defer c2.Close()
	for i, op := range []struct {
		name string
		do   func(context.Context) error
	}{
		{"Call being written", func(ctx context.Context) error { return p.Call(ctx, "m", nil, nil) }},
		{"Call queued", func(ctx context.Context) error { return p.Call(ctx, "m", nil, nil) }},
		{"Notify queued", func(ctx context.Context) error { return p.Notify(ctx, "n", nil) }},
		{"Batch queued", func(ctx context.Context) error { return p.Batch(ctx, []BatchElem{{Method: "m"}}) }},
		{"notification Batch queued", func(ctx context.Context) error {
			return p.Batch(ctx, []BatchElem{{Method: "n", Notification: true}})
		}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		errc := make(chan error, 1)
		go func() { errc <- op.do(ctx) }()
		select {
		case err := <-errc:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%d %s = %v, want context.DeadlineExceeded", i, op.name, err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("%s returned after %v, its ctx ended after 100 ms", op.name, d)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s still blocked 2 s into a 100 ms ctx", op.name)
		}
		cancel()
	}
	if n := pendingLen(p); n != 0 {
		t.Errorf("%d calls left pending", n)
	}
}

// TestCallCtxWhileWaitingForRoom: a Call that finds the outbound queue
// over its budget waits for room, and leaves when its ctx ends.
func TestCallCtxWhileWaitingForRoom(t *testing.T) {
	c1, c2 := Pipe()
	p := NewPeer(c1, Options{MaxOutboundBytes: 1 << 10})
	cleanupPeer(t, p)
	defer c2.Close()
	big := make([]int, 400) // about 800 bytes of params
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	go p.Notify(context.Background(), "being-written", big) // taken by the writer, which blocks
	eventually(t, "the writer blocked", func() bool {
		p.out.mu.Lock()
		defer p.out.mu.Unlock()
		return p.out.bytes > 0 && len(p.out.q) == 0
	})
	go p.Notify(context.Background(), "waiting", big) // over the budget: waits for room
	eventually(t, "a notification waiting for room", func() bool {
		p.out.mu.Lock()
		defer p.out.mu.Unlock()
		return p.out.waiters == 1
	})
	if err := p.Call(ctx, "m", big, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call = %v, want context.DeadlineExceeded", err)
	}
}

// TestEndedCtxSendsNothing: a Call, Notify or Batch whose ctx has ended
// before it is made sends nothing and returns the ctx's error. On 3db20dd
// the message was still queued and the writer could take it before the
// caller withdrew it: of 3,000 each, 44-72 call handlers and 25-40
// notification handlers ran on the remote, and 2-4 Notifies returned nil.
func TestEndedCtxSendsNothing(t *testing.T) {
	var ran atomic.Int64
	h := mux(t, map[string]HandlerFunc{"m": func(ctx context.Context, req *Request) (any, error) {
		ran.Add(1)
		return nil, nil
	}})
	client, _ := newPair(t, nil, h, nil, nil)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	const n = 3000
	var nilErrs int
	for range n {
		if err := client.Call(ended, "m", nil, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Call with an ended ctx = %v, want context.Canceled", err)
		}
		if err := client.Notify(ended, "m", nil); err == nil {
			nilErrs++
		} else if !errors.Is(err, context.Canceled) {
			t.Fatalf("Notify with an ended ctx = %v, want context.Canceled", err)
		}
	}
	for range n / 10 {
		err := client.Batch(ended, []BatchElem{{Method: "m"}, {Method: "m", Notification: true}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Batch with an ended ctx = %v, want context.Canceled", err)
		}
	}
	// Everything sent before this call has been handled by the time it
	// returns: notifications run in order, and a call after them.
	if err := client.Call(testCtx(t, wait), "m", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := ran.Load() - 1; got != 0 || nilErrs != 0 {
		t.Errorf("with an ended ctx: %d handlers ran on the remote, %d of %d Notifies returned nil", got, nilErrs, n)
	}
}
