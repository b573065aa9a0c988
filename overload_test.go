package jsonrpc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPipelinedThousandCalls: with the defaults, 1,000 calls in flight at
// once all get their results; none is refused as overload.
func TestPipelinedThousandCalls(t *testing.T) {
	a, _ := newPair(t, nil, mux(t, map[string]HandlerFunc{"sleep": sleeper}), nil, nil)
	ctx := testCtx(t, 4*wait)
	var wg sync.WaitGroup
	var okCount atomic.Int64
	errs := make(chan error, 1000)
	for range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ms int
			if err := a.Call(ctx, "sleep", []int{10}, &ms); err != nil {
				errs <- err
			} else if ms == 10 {
				okCount.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if okCount.Load() != 1000 {
		t.Errorf("%d of 1000 calls succeeded", okCount.Load())
	}
}

// TestOverloadFlood floods a Peer with small limits and blocked handlers:
// exactly MaxConcurrent run, exactly MaxQueued wait, the rest are refused at
// once, every call gets one answer, and the Peer recovers.
func TestOverloadFlood(t *testing.T) {
	const maxConc, maxQueued, n = 2, 4, 200
	release := make(chan struct{})
	var probe overlapProbe
	h := mux(t, map[string]HandlerFunc{
		"slow": func(ctx context.Context, _ *Request) (any, error) {
			probe.enter(0)
			defer probe.leave()
			select {
			case <-release:
				return "done", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		"fast": func(context.Context, *Request) (any, error) { return "fast", nil },
	})
	a, b := newPair(t, nil, h, nil, &Options{MaxConcurrent: maxConc, MaxQueued: maxQueued})
	ctx := testCtx(t, wait)
	var overloaded, served, other atomic.Int64
	var wg sync.WaitGroup
	defer func() { a.Close(); b.Close(); wg.Wait() }() // on failure too: no stray t.Errorf
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s string
			err := a.Call(ctx, "slow", nil, &s)
			switch {
			case err == nil && s == "done":
				served.Add(1)
			case errors.Is(err, &Error{Code: CodeOverloaded}):
				overloaded.Add(1)
			default:
				other.Add(1)
				t.Errorf("unexpected outcome %q, %v", s, err)
			}
		}()
	}
	eventually(t, "the refusals", func() bool { return overloaded.Load() == n-maxConc-maxQueued })
	eventually(t, "the handlers to start", func() bool { return probe.count() == maxConc })
	b.inbound.mu.Lock()
	queued := b.inbound.queued
	b.inbound.mu.Unlock()
	if queued != maxQueued {
		t.Errorf("%d jobs queued, want %d", queued, maxQueued)
	}
	close(release)
	wg.Wait()
	if served.Load() != maxConc+maxQueued || overloaded.Load() != n-maxConc-maxQueued || other.Load() != 0 {
		t.Errorf("served %d, overloaded %d, other %d", served.Load(), overloaded.Load(), other.Load())
	}
	probe.mu.Lock()
	most := probe.most
	probe.mu.Unlock()
	if most > maxConc {
		t.Errorf("%d handlers ran at once, limit %d", most, maxConc)
	}
	var s string
	if err := a.Call(ctx, "fast", nil, &s); err != nil || s != "fast" {
		t.Errorf("after the flood: %q, %v", s, err)
	}
}

// TestParkedHandlersAreBounded: handlers parked in callbacks free their
// slots but count against MaxQueued, so a remote that never answers cannot
// make the Peer run unbounded handlers.
func TestParkedHandlersAreBounded(t *testing.T) {
	const maxConc, maxQueued = 1, 3
	release := make(chan struct{})
	clientH := mux(t, map[string]HandlerFunc{"stall": func(ctx context.Context, _ *Request) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}})
	var entered atomic.Int64
	serverH := mux(t, map[string]HandlerFunc{"callback": func(ctx context.Context, _ *Request) (any, error) {
		entered.Add(1)
		return nil, PeerFromContext(ctx).Call(ctx, "stall", nil, nil)
	}})
	a, _ := newPair(t, clientH, serverH, nil, &Options{MaxConcurrent: maxConc, MaxQueued: maxQueued})
	ctx := testCtx(t, wait)
	const n = 20
	var overloaded atomic.Int64
	var wg sync.WaitGroup
	defer func() { a.Close(); wg.Wait() }() // on failure too: no stray t.Errorf
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := a.Call(ctx, "callback", nil, nil)
			if errors.Is(err, &Error{Code: CodeOverloaded}) {
				overloaded.Add(1)
			} else if err != nil {
				t.Errorf("callback: %v", err)
			}
		}()
	}
	eventually(t, "refusals", func() bool { return overloaded.Load()+entered.Load() == n })
	if got := entered.Load(); got > maxConc+maxQueued {
		t.Errorf("%d handlers entered, want at most %d", got, maxConc+maxQueued)
	}
	close(release)
	wg.Wait()
}

// TestMutualFloodNoDeadlock is the regression test for a deadlock: the read
// loop wrote its refusals itself, so two Peers refusing each other's calls
// both blocked writing, neither reading, for good.
func TestMutualFloodNoDeadlock(t *testing.T) {
	h := mux(t, map[string]HandlerFunc{"sleep": sleeper})
	o := &Options{MaxConcurrent: 1, MaxQueued: 1}
	a, b := newPair(t, h, h, o, o)
	ctx := testCtx(t, wait)
	const n = 400
	var wg sync.WaitGroup
	defer func() { a.Close(); b.Close(); wg.Wait() }() // on failure too: no stray t.Errorf
	var ok, refused atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := []*Peer{a, b}[i%2].Call(ctx, "sleep", []int{1}, nil)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, &Error{Code: CodeOverloaded}):
				refused.Add(1)
			default:
				t.Errorf("Call: %v", err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait + time.Second):
		t.Fatalf("deadlock: %d of %d calls answered", ok.Load()+refused.Load(), n)
	}
	if ok.Load()+refused.Load() != n || ok.Load() == 0 {
		t.Errorf("%d served, %d refused of %d", ok.Load(), refused.Load(), n)
	}
	for _, p := range []*Peer{a, b} {
		if err := p.Call(ctx, "sleep", []int{0}, nil); err != nil {
			t.Errorf("after the flood: %v", err)
		}
	}
}

// TestReadLoopNeverWaitsToWrite: a remote that floods a Peer with calls it
// must refuse, and reads nothing back, cannot stop the Peer's read loop: it
// keeps reading while the refusals held for the remote stay under
// maxControlBytes, and then ends the connection with ErrSlowConsumer rather
// than hold more or wait.
func TestReadLoopNeverWaitsToWrite(t *testing.T) {
	release := make(chan struct{})
	h := mux(t, map[string]HandlerFunc{"block": func(ctx context.Context, _ *Request) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}})
	c1, c2 := Pipe()
	p := NewPeer(c1, Options{Handler: h, MaxConcurrent: 1, MaxQueued: 1})
	cleanupPeer(t, p)
	defer close(release)
	id := `"` + strings.Repeat("x", 1000) + `"` // makes each refusal about 1.2 kB
	call := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"block"}`)
	const n = 1500 // more refusals than the control budget holds
	written := 0
	for ; written < n; written++ {
		if err := writeWithin(c2, call, wait); err != nil {
			break // the Peer ended the connection
		}
	}
	// A refusal is the id (1,000 bytes) and the error with its data
	// (overloadedData): about 1.2 kB, charged at its buffer's capacity,
	// which may be up to twice that (the refusals held are counted at
	// what they keep): at least half the budget's worth must be read.
	refusal := len(appendErrorResponse(nil, ID{raw: id}, &Error{Code: CodeOverloaded, Message: "Server overloaded", Data: overloadedData}))
	if written < maxControlBytes/(2*refusal) {
		t.Errorf("the read loop stopped reading after %d calls", written)
	}
	if err := within(t, waitErr(p), "the Peer to end"); !errors.Is(err, ErrSlowConsumer) {
		t.Fatalf("Wait = %v, want ErrSlowConsumer", err)
	}
}

// waitErr returns a channel that gets p.Wait's result.
func waitErr(p *Peer) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- p.Wait() }()
	return ch
}

// notifyCost is what a notification without params costs against
// MaxQueuedBytes.
const notifyCost = len(`{"jsonrpc":"2.0","method":"inc"}`) + msgOverhead

// TestNotificationFloodPushesBack: notifications sent faster than they are
// handled, past MaxQueuedBytes, are not dropped: the read loop waits for room,
// which pushes back on the sender (here, through the Pipe).
func TestNotificationFloodPushesBack(t *testing.T) {
	var n atomic.Int64
	h := mux(t, map[string]HandlerFunc{"inc": func(ctx context.Context, r *Request) (any, error) {
		time.Sleep(50 * time.Microsecond)
		n.Add(1)
		return nil, nil
	}})
	client, _ := newPair(t, nil, h, nil, &Options{MaxQueuedBytes: 4 * notifyCost})
	const total = 500
	for range total {
		if err := client.Notify(testCtx(t, wait), "inc", nil); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every notification handled", func() bool { return n.Load() == total })
}

// TestNotificationFloodWhileAwaitingReply: while the flooded Peer waits for
// a reply of its own, its read loop must keep reading to deliver it, so it
// may not push back; it takes notifications beyond MaxQueuedBytes instead,
// up to twice it, and drops none (it used to drop them: an LSP didChange lost).
func TestNotificationFloodWhileAwaitingReply(t *testing.T) {
	release := make(chan struct{})
	var handled atomic.Int64
	serverMux := mux(t, map[string]HandlerFunc{"inc": func(ctx context.Context, r *Request) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		handled.Add(1)
		return nil, nil
	}})
	answered := make(chan struct{})
	clientMux := mux(t, map[string]HandlerFunc{"ask": func(ctx context.Context, r *Request) (any, error) {
		<-answered
		return "yes", nil
	}})
	client, server := newPair(t, clientMux, serverMux, nil, &Options{MaxQueuedBytes: 4 * notifyCost})
	got := make(chan error, 1)
	go func() {
		var s string
		got <- server.Call(testCtx(t, wait), "ask", nil, &s)
	}()
	eventually(t, "the server's call pending", func() bool { return server.pending.len() == 1 })
	const n = 8 // one running, the rest queued: within twice the budget
	for range n {
		if err := client.Notify(testCtx(t, wait), "inc", nil); err != nil {
			t.Fatal(err)
		}
	}
	close(answered)
	if err := within(t, got, "the server's call"); err != nil {
		t.Fatalf("server's call: %v", err)
	}
	close(release)
	eventually(t, "every notification handled", func() bool { return handled.Load() == n })
}

// TestNotificationOverflowEndsConnection: past twice MaxQueuedBytes, while it
// may not push back (a reply is awaited), the Peer ends the connection with
// a cause wrapping ErrOverloaded, within a bounded time, rather than drop
// notifications or hold more.
func TestNotificationOverflowEndsConnection(t *testing.T) {
	serverMux := mux(t, map[string]HandlerFunc{"block": func(ctx context.Context, r *Request) (any, error) {
		<-ctx.Done()
		return nil, nil
	}})
	answer := make(chan struct{})
	defer close(answer)
	clientMux := mux(t, map[string]HandlerFunc{"ask": func(ctx context.Context, r *Request) (any, error) {
		select {
		case <-answer:
		case <-ctx.Done():
		}
		return "yes", nil
	}})
	client, server := newPair(t, clientMux, serverMux, nil, &Options{MaxQueuedBytes: 4 * notifyCost})
	got := make(chan error, 1)
	go func() { got <- server.Call(testCtx(t, wait), "ask", nil, nil) }()
	eventually(t, "the server's call pending", func() bool { return server.pending.len() == 1 })
	for i := range 20 {
		if err := client.Notify(testCtx(t, wait), "block", nil); err != nil {
			if i < 6 {
				t.Fatalf("notification %d: %v", i, err)
			}
			break
		}
	}
	if err := within(t, waitErr(server), "the server to end"); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("server's Wait = %v, want ErrOverloaded", err)
	}
	if err := within(t, got, "the server's call"); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrOverloaded) {
		t.Errorf("server's call = %v, want ErrClosed wrapping ErrOverloaded", err)
	}
}
