package jsonrpc

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The issue requires that, with the defaults, 20 calls each taking 300 ms
// finish in well under the 6 s they would take one at a time, and so does a
// batch of 10. The bound has a large margin: it checks concurrency, not
// speed.
func TestDefaultsRunCallsConcurrently(t *testing.T) {
	a, _ := newPair(t, nil, mux(t, map[string]HandlerFunc{"sleep": sleeper}), nil, nil)
	ctx := testCtx(t, wait)
	t.Run("20 calls", func(t *testing.T) {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- a.Call(ctx, "sleep", []int{300}, nil)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if d := time.Since(start); d >= 1500*time.Millisecond {
			t.Errorf("20 concurrent 300 ms calls took %v", d)
		}
	})
	t.Run("batch of 10", func(t *testing.T) {
		elems := make([]BatchElem, 10)
		for i := range elems {
			elems[i] = BatchElem{Method: "sleep", Params: []int{300}}
		}
		start := time.Now()
		if err := a.Batch(ctx, elems); err != nil {
			t.Fatal(err)
		}
		for i, e := range elems {
			if e.Error != nil {
				t.Errorf("element %d: %v", i, e.Error)
			}
		}
		if d := time.Since(start); d >= 1500*time.Millisecond {
			t.Errorf("a batch of 10 300 ms calls took %v", d)
		}
	})
}

// overlapProbe records the order handlers entered in and the most that ran
// at once.
type overlapProbe struct {
	mu      sync.Mutex
	order   []int
	running int
	most    int
}

func (o *overlapProbe) enter(seq int) {
	o.mu.Lock()
	o.order = append(o.order, seq)
	o.running++
	o.most = max(o.most, o.running)
	o.mu.Unlock()
}

func (o *overlapProbe) leave() {
	o.mu.Lock()
	o.running--
	o.mu.Unlock()
}

func (o *overlapProbe) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.order)
}

// TestNotificationsInOrder: by default notifications run one at a time in
// arrival order, even while calls are being served.
func TestNotificationsInOrder(t *testing.T) {
	var probe overlapProbe
	h := mux(t, map[string]HandlerFunc{
		"seq": func(_ context.Context, req *Request) (any, error) {
			var s []int
			json.Unmarshal(req.Params, &s)
			probe.enter(s[0])
			defer probe.leave()
			time.Sleep(100 * time.Microsecond) // widen any overlap
			return nil, nil
		},
		"sleep": sleeper,
	})
	a, _ := newPair(t, nil, h, nil, nil)
	ctx := testCtx(t, wait)
	const n = 200
	var calls sync.WaitGroup
	for i := range n {
		if i%20 == 0 {
			calls.Add(1)
			go func() { defer calls.Done(); a.Call(ctx, "sleep", []int{1}, nil) }()
		}
		if err := a.Notify(ctx, "seq", []int{i}); err != nil {
			t.Fatal(err)
		}
	}
	calls.Wait()
	eventually(t, "200 notifications", func() bool { return probe.count() == n })
	probe.mu.Lock()
	defer probe.mu.Unlock()
	if probe.most != 1 {
		t.Errorf("up to %d notification handlers ran at once, want 1", probe.most)
	}
	for i, s := range probe.order {
		if s != i {
			t.Fatalf("notification %d handled at position %d: order %v", s, i, probe.order)
		}
	}
}

// TestConcurrentNotifications: with the option, two notifications whose
// handlers each wait for the other both run.
func TestConcurrentNotifications(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	var ok atomic.Int64
	h := mux(t, map[string]HandlerFunc{"meet": func(ctx context.Context, _ *Request) (any, error) {
		arrived.Done()
		select {
		case <-both:
			ok.Add(1)
		case <-ctx.Done():
		}
		return nil, nil
	}})
	a, _ := newPair(t, nil, h, nil, &Options{ConcurrentNotifications: true})
	ctx := testCtx(t, wait)
	for range 2 {
		if err := a.Notify(ctx, "meet", nil); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both notifications to run at once", func() bool { return ok.Load() == 2 })
}

// TestSecondJobNotLeftToOneLingeringRunner pins a bug of runner reuse: with
// one runner lingering, two requests arriving back to back were both queued
// for it; it took the first, which blocks, and the second waited forever.
func TestSecondJobNotLeftToOneLingeringRunner(t *testing.T) {
	for i := range 50 {
		h := mux(t, map[string]HandlerFunc{
			"quick": func(ctx context.Context, r *Request) (any, error) { return 1, nil },
			"block": func(ctx context.Context, r *Request) (any, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
		})
		_, raw := newRaw(t, h, nil)
		raw.call(`{"jsonrpc":"2.0","id":1,"method":"quick"}`) // leaves a runner lingering
		raw.send(`{"jsonrpc":"2.0","id":2,"method":"block"}`)
		if got := raw.call(`{"jsonrpc":"2.0","id":3,"method":"quick"}`); string(got) != `{"jsonrpc":"2.0","id":3,"result":1}` {
			t.Fatalf("round %d: got %s", i, got)
		}
	}
}

// TestCallsWaitForEarlierNotifications: a call starts only after the
// notifications that arrived before it were handled, as LSP needs (a hover
// after many didChange must see them all).
func TestCallsWaitForEarlierNotifications(t *testing.T) {
	var mu sync.Mutex
	n := 0
	h := mux(t, map[string]HandlerFunc{
		"inc": func(ctx context.Context, r *Request) (any, error) {
			time.Sleep(10 * time.Microsecond)
			mu.Lock()
			n++
			mu.Unlock()
			return nil, nil
		},
		"get": func(ctx context.Context, r *Request) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			return n, nil
		},
	})
	client, _ := newPair(t, nil, h, nil, nil)
	for round := 1; round <= 10; round++ {
		for range 200 {
			if err := client.Notify(testCtx(t, wait), "inc", nil); err != nil {
				t.Fatal(err)
			}
		}
		var got int
		if err := client.Call(testCtx(t, wait), "get", nil, &got); err != nil || got != 200*round {
			t.Fatalf("round %d: get = %d, %v; want %d", round, got, err, 200*round)
		}
	}
}

// TestNotificationCallingBackDoesNotBlockCalls: a notification handler that
// calls the remote side, whose handler calls back into this Peer, does not
// deadlock against the ordering of calls behind notifications.
func TestNotificationCallingBackDoesNotBlockCalls(t *testing.T) {
	aMux := mux(t, map[string]HandlerFunc{
		"opened": func(ctx context.Context, r *Request) (any, error) {
			var v int
			err := PeerFromContext(ctx).Call(ctx, "config", nil, &v)
			return nil, err
		},
		"value": func(ctx context.Context, r *Request) (any, error) { return 7, nil },
	})
	bMux := mux(t, map[string]HandlerFunc{
		"config": func(ctx context.Context, r *Request) (any, error) {
			var v int
			err := PeerFromContext(ctx).Call(ctx, "value", nil, &v) // waits behind "opened"
			return v, err
		},
		"done": func(ctx context.Context, r *Request) (any, error) { return true, nil },
	})
	_, b := newPair(t, aMux, bMux, nil, nil)
	if err := b.Notify(testCtx(t, wait), "opened", nil); err != nil {
		t.Fatal(err)
	}
	// A call from b queued behind "opened" on a also completes.
	var v int
	if err := b.Call(testCtx(t, wait), "value", nil, &v); err != nil || v != 7 {
		t.Fatalf("value = %d, %v", v, err)
	}
}
