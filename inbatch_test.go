package jsonrpc

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestBatchElementWaitsForLaterElement: the runner serves a batch's
// elements one after the other, so an element that waits for a later one
// (which has not started) must get a helper to run that one, rather than
// hang.
func TestBatchElementWaitsForLaterElement(t *testing.T) {
	started := make(chan struct{})
	h := mux(t, map[string]HandlerFunc{
		"wait": func(ctx context.Context, _ *Request) (any, error) {
			select {
			case <-started:
				return "waited", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		"start": func(context.Context, *Request) (any, error) {
			close(started)
			return "started", nil
		},
	})
	a, _ := newPair(t, nil, h, nil, nil)
	got := make([]string, 2)
	elems := []BatchElem{{Method: "wait", Result: &got[0]}, {Method: "start", Result: &got[1]}}
	if err := a.Batch(testCtx(t, wait), elems); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"waited", "started"} {
		if elems[i].Error != nil || got[i] != want {
			t.Errorf("element %d: %q, %v; want %q", i, got[i], elems[i].Error, want)
		}
	}
}

// TestBatchConcurrencyBound: handlers that block get helpers, but no more
// than BatchConcurrency elements of one batch run at once.
func TestBatchConcurrencyBound(t *testing.T) {
	const limit, n = 3, 12
	probe := &overlapProbe{}
	h := mux(t, map[string]HandlerFunc{
		"slow": func(ctx context.Context, _ *Request) (any, error) {
			probe.enter(0)
			defer probe.leave()
			time.Sleep(20 * time.Millisecond)
			return nil, nil
		},
	})
	a, _ := newPair(t, nil, h, nil, &Options{BatchConcurrency: limit})
	elems := make([]BatchElem, n)
	for i := range elems {
		elems[i] = BatchElem{Method: "slow"}
	}
	start := time.Now()
	if err := a.Batch(testCtx(t, wait), elems); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	for i, e := range elems {
		if e.Error != nil {
			t.Errorf("element %d: %v", i, e.Error)
		}
	}
	probe.mu.Lock()
	most := probe.most
	probe.mu.Unlock()
	if most > limit {
		t.Errorf("%d elements ran at once, limit %d", most, limit)
	}
	if most < 2 {
		t.Errorf("blocking elements ran one at a time (took %v): no helper joined", elapsed)
	}
}

// TestQuickBatchStartsNoGoroutinePerElement: a batch of quick handlers is
// served by the runner itself; a goroutine per element (the old way) would
// show in the goroutines seen from inside the handlers.
func TestQuickBatchStartsNoGoroutinePerElement(t *testing.T) {
	const n = 200
	var most atomic.Int64
	h := mux(t, map[string]HandlerFunc{
		"quick": func(context.Context, *Request) (any, error) {
			g := int64(runtime.NumGoroutine())
			for m := most.Load(); g > m && !most.CompareAndSwap(m, g); m = most.Load() {
			}
			return 1, nil
		},
	})
	a, _ := newPair(t, nil, h, nil, nil) // BatchConcurrency 16
	base := runtime.NumGoroutine()
	elems := make([]BatchElem, n)
	for i := range elems {
		elems[i] = BatchElem{Method: "quick"}
	}
	if err := a.Batch(testCtx(t, wait), elems); err != nil {
		t.Fatal(err)
	}
	// The runner, and a helper or two if the machine stalled the runner
	// for a tick; a goroutine per element would reach base+16.
	if m := most.Load(); m > int64(base)+6 {
		t.Errorf("up to %d goroutines while serving a batch of %d quick calls, %d before", m, n, base)
	}
}
