package jsonrpc

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gauge counts handlers running at once and keeps the peak.
type gauge struct {
	now, peak atomic.Int64
}

func (g *gauge) enter() {
	n := g.now.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

// TestMaxConcurrentWithCallbacks pins the first half of issue 9's finding
// 5: a handler that made 4 concurrent callbacks gave its slot back 4 times,
// so with MaxConcurrent 1 four other handlers ran beside it. It now gives
// its one slot back once, and takes it back when its last callback is done.
func TestMaxConcurrentWithCallbacks(t *testing.T) {
	var work gauge
	release := make(chan struct{})
	server := mux(t, map[string]HandlerFunc{
		"fanout": func(ctx context.Context, _ *Request) (any, error) {
			p := PeerFromContext(ctx)
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p.Call(ctx, "hold", nil, nil)
				}()
			}
			wg.Wait()
			return nil, nil
		},
		"work": func(ctx context.Context, _ *Request) (any, error) {
			work.enter()
			defer work.leave()
			time.Sleep(20 * time.Millisecond)
			return nil, nil
		},
	})
	held := make(chan struct{}, 4)
	client := mux(t, map[string]HandlerFunc{"hold": func(ctx context.Context, _ *Request) (any, error) {
		held <- struct{}{}
		<-release
		return nil, nil
	}})
	c, s := newPair(t, client, server, nil, &Options{MaxConcurrent: 1})
	ctx := testCtx(t, wait)
	fan := make(chan error, 1)
	go func() { fan <- c.Call(ctx, "fanout", nil, nil) }()
	for range 4 {
		within(t, held, "the callbacks")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Call(ctx, "work", nil, nil); err != nil {
				t.Errorf("work: %v", err)
			}
		}()
	}
	wg.Wait()
	close(release)
	if err := within(t, fan, "fanout"); err != nil {
		t.Fatal(err)
	}
	if p := work.peak.Load(); p != 1 {
		t.Errorf("%d handlers ran at once beside a parked one, want 1 (MaxConcurrent)", p)
	}
	s.inbound.mu.Lock()
	defer s.inbound.mu.Unlock()
	if s.inbound.calls.running > 1 || s.inbound.parked != 0 {
		t.Errorf("slots left: %d running, %d parked", s.inbound.calls.running, s.inbound.parked)
	}
}

// TestMaxConcurrentWithBatches pins the second half of finding 5: an
// inbound batch took one slot but ran up to BatchConcurrency handlers, so
// the defaults allowed 64 × 16 concurrent handlers. Each element now takes
// a slot of its own.
func TestMaxConcurrentWithBatches(t *testing.T) {
	var g gauge
	server := mux(t, map[string]HandlerFunc{"work": func(ctx context.Context, _ *Request) (any, error) {
		g.enter()
		defer g.leave()
		time.Sleep(2 * time.Millisecond)
		return 1, nil
	}})
	const maxConc = 3
	c, _ := newPair(t, nil, server, nil, &Options{MaxConcurrent: maxConc, BatchConcurrency: 16})
	ctx := testCtx(t, wait)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() { // batches
			defer wg.Done()
			elems := make([]BatchElem, 20)
			for i := range elems {
				elems[i] = BatchElem{Method: "work"}
			}
			if err := c.Batch(ctx, elems); err != nil {
				t.Errorf("Batch: %v", err)
			}
			for i, e := range elems {
				if e.Error != nil {
					t.Errorf("element %d: %v", i, e.Error)
				}
			}
		}()
		go func() { // and single calls among them
			defer wg.Done()
			for range 5 {
				if err := c.Call(ctx, "work", nil, nil); err != nil {
					t.Errorf("Call: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if p := g.peak.Load(); p > maxConc || p < 2 {
		t.Errorf("%d handlers ran at once, want at most %d (and more than one)", p, maxConc)
	}
	t.Logf("peak %d handlers at once", g.peak.Load())
}
