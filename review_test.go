package jsonrpc

// Regression tests for the second review of the flow control (issue
// "Trust II"): each failed on 11ef99e and is named for what it pins.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCloseFromOnConnect: refusing a connection in OnConnect is a normal
// thing for a server to do; NewPeer and Serve must return.
func TestCloseFromOnConnect(t *testing.T) {
	for _, how := range []string{"Close", "Shutdown"} {
		for _, serve := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/serve=%v", how, serve), func(t *testing.T) {
				c1, c2 := Pipe()
				defer c2.Close()
				opts := Options{OnConnect: func(p *Peer) {
					if how == "Close" {
						p.Close()
					} else {
						p.Shutdown(context.Background())
					}
				}}
				done := make(chan error, 1)
				go func() {
					if serve {
						done <- Serve(c1, opts)
						return
					}
					p := NewPeer(c1, opts)
					<-p.Done()
					done <- p.Wait()
				}()
				if err := within(t, done, "NewPeer or Serve with "+how+" in OnConnect"); err != nil {
					t.Errorf("Wait = %v, want nil after a local %s", err, how)
				}
				if _, err := c2.Read(); err == nil {
					t.Error("the connection is still open")
				}
			})
		}
	}
}

// TestBatchedNotificationsKeepOrder: notifications run one at a time in
// arrival order whether they come alone or in a batch (1, [2], 3 ran as 1,
// 3, 2).
func TestBatchedNotificationsKeepOrder(t *testing.T) {
	for round := range 30 {
		var mu sync.Mutex
		var got []int
		h := mux(t, map[string]HandlerFunc{"n": func(ctx context.Context, req *Request) (any, error) {
			var p [1]int
			if err := unmarshalJSON(req.Params, &p); err != nil {
				return nil, err
			}
			if p[0] == 1 {
				time.Sleep(2 * time.Millisecond) // let 2 and 3 race, if they can
			}
			mu.Lock()
			got = append(got, p[0])
			mu.Unlock()
			return nil, nil
		}})
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			_, r := newRaw(t, h, nil)
			r.send(`{"jsonrpc":"2.0","method":"n","params":[1]}`)
			r.send(`[{"jsonrpc":"2.0","method":"n","params":[2]},{"jsonrpc":"2.0","method":"n","params":[3]}]`)
			r.send(`{"jsonrpc":"2.0","method":"n","params":[4]}`)
			eventually(t, "four notifications handled", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) == 4
			})
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(got) != "[1 2 3 4]" {
				t.Fatalf("handled in the order %v, want [1 2 3 4]", got)
			}
		})
	}
}

// TestMixedBatchCallWaitsForEarlierNotifications: a call in a batch still
// starts only after the notifications that arrived before it.
func TestMixedBatchCallWaitsForEarlierNotifications(t *testing.T) {
	var seen atomic.Int32
	h := mux(t, map[string]HandlerFunc{
		"n": func(ctx context.Context, req *Request) (any, error) {
			time.Sleep(5 * time.Millisecond)
			seen.Add(1)
			return nil, nil
		},
		"count": func(ctx context.Context, req *Request) (any, error) { return seen.Load(), nil },
	})
	_, r := newRaw(t, h, nil)
	r.send(`{"jsonrpc":"2.0","method":"n"}`)
	got := r.call(`[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","method":"count","id":1}]`)
	assertJSON(t, got, `[{"jsonrpc":"2.0","result":2,"id":1}]`)
}

// TestAllNotificationBatchPushedBackNotDropped: an all-notification batch
// that arrives while the inbound budget is full is pushed back like a lone
// notification, never dropped (10 of 10 were lost, and Batch returned nil).
func TestAllNotificationBatchPushedBackNotDropped(t *testing.T) {
	release := make(chan struct{})
	var handled atomic.Int32
	h := mux(t, map[string]HandlerFunc{"n": func(ctx context.Context, req *Request) (any, error) {
		if handled.Add(1) == 1 {
			<-release
		}
		return nil, nil
	}})
	server, client := newPair(t, h, nil, &Options{MaxQueuedBytes: 4096}, nil)
	_ = server
	ctx := testCtx(t, wait)
	if err := client.Notify(ctx, "n", []string{strings.Repeat("x", 4000)}); err != nil {
		t.Fatal(err)
	}
	elems := make([]BatchElem, 10)
	for i := range elems {
		elems[i] = BatchElem{Method: "n", Params: []int{i}, Notification: true}
	}
	sent := make(chan error, 1)
	go func() { sent <- client.Batch(ctx, elems) }()
	time.Sleep(20 * time.Millisecond) // the batch reaches the full budget
	close(release)
	if err := within(t, sent, "Batch"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "all 11 notifications handled", func() bool { return handled.Load() == 11 })
}

// TestBatchRepliesWithinBudget: the replies of inbound batches count
// against the inbound budget while they are built, so a client that sends
// batches of cheap calls with large results and never reads cannot make
// the server hold more than the documented bound (14 batches of 1,000 calls
// with 8 KiB results held 160-194 MiB).
func TestBatchRepliesWithinBudget(t *testing.T) {
	big := strings.Repeat("r", 8<<10)
	var calls atomic.Int64
	h := mux(t, map[string]HandlerFunc{"big": func(ctx context.Context, req *Request) (any, error) {
		calls.Add(1)
		return big, nil
	}})
	var ms runtime.MemStats
	// Two collections each time: the first only moves sync.Pool's caches
	// to their victim caches, which the second frees; the buffers pooled
	// then (reply buffers, sized by how many replies were built before
	// the connection stalled) are not held by the server.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse

	c1, c2 := Pipe() // c2 is never read: the client does not read
	p := NewPeer(c1, Options{Handler: h})
	cleanupPeer(t, p)
	defer c2.Close()
	var b strings.Builder
	b.WriteByte('[')
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"big","id":%d}`, i)
	}
	b.WriteByte(']')
	batch := []byte(b.String())
	for range 14 {
		if err := writeWithin(c2, batch, wait); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until no handler has run for a while: the server is stuck on
	// the unread connection.
	deadline := time.Now().Add(wait)
	for last := int64(-1); ; {
		time.Sleep(100 * time.Millisecond)
		n := calls.Load()
		if n == last || time.Now().After(deadline) {
			break
		}
		last = n
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	held := int64(ms.HeapInuse) - int64(before)
	t.Logf("%d handlers ran; heap grew by %.1f MiB", calls.Load(), float64(held)/(1<<20))
	// 2 × 4 MiB inbound, 4 MiB outbound, 1 MiB control, the batches'
	// requests (14 × 43 KB) and slack for the test's own buffers.
	if limit := int64(24 << 20); held > limit {
		t.Errorf("the server holds %.1f MiB, over %d MiB", float64(held)/(1<<20), limit>>20)
	}
}

// TestHandlerCallCtxBoundsSlotWait: a handler's Call returns by its ctx's
// deadline even when every slot is taken when its reply comes (it waited
// for a slot, 2 s, ignoring its 100 ms ctx).
func TestHandlerCallCtxBoundsSlotWait(t *testing.T) {
	release := make(chan struct{})
	returned := make(chan time.Duration, 1)
	var slow atomic.Int32
	server := mux(t, map[string]HandlerFunc{
		"slow": func(ctx context.Context, req *Request) (any, error) {
			slow.Add(1)
			<-release
			return nil, nil
		},
		"caller": func(ctx context.Context, req *Request) (any, error) {
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := PeerFromContext(ctx).Call(cctx, "pong", nil, nil)
			returned <- time.Since(start)
			return nil, err
		},
	})
	client := mux(t, map[string]HandlerFunc{"pong": func(ctx context.Context, req *Request) (any, error) {
		eventually(t, "the slow handlers hold every slot", func() bool { return slow.Load() == 2 })
		return nil, nil
	}})
	_, c := newPair(t, server, client, &Options{MaxConcurrent: 2}, nil)
	ctx := testCtx(t, wait)
	callerDone := make(chan error, 1)
	go func() { callerDone <- c.Call(ctx, "caller", nil, nil) }()
	time.Sleep(10 * time.Millisecond) // the caller parks, giving its slot back
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); c.Call(ctx, "slow", nil, nil) }()
	}
	defer wg.Wait()
	defer close(release)
	select {
	case d := <-returned:
		if d > time.Second {
			t.Errorf("the handler's Call returned after %v, its ctx ended at 100 ms", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the handler's Call has not returned 2 s after its 100 ms ctx ended")
	}
	if err := within(t, callerDone, "the caller's reply"); err != nil {
		t.Logf("caller: %v", err)
	}
}

// TestBatchOverMaxBatchFailsAtSender: a Batch longer than MaxBatch, which a
// remote side configured alike refuses whole with an id-null error that
// reaches no caller, fails at once (it waited for its whole ctx).
func TestBatchOverMaxBatchFailsAtSender(t *testing.T) {
	_, client := newPair(t, nil, nil, nil, nil)
	elems := make([]BatchElem, 1001)
	for i := range elems {
		elems[i] = BatchElem{Method: "m"}
	}
	err := client.Batch(testCtx(t, wait), elems)
	if !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("Batch of 1001 = %v, want ErrBatchTooLarge", err)
	}
}

// limitedConn is a Conn with a size limit, as stdio's and ws's Conns are.
type limitedConn struct {
	Conn
	max int
}

func (c limitedConn) MaxMessageSize() int { return c.max }

// TestOversizeMessageFailsAtSender: a message over the Conn's limit is
// refused by the sending side at once with ErrMessageTooLarge, and the
// connection stays usable; a handler's reply over it becomes an Internal
// error reply.
func TestOversizeMessageFailsAtSender(t *testing.T) {
	c1, c2 := Pipe()
	h := mux(t, map[string]HandlerFunc{
		"echo": echo,
		"big":  func(ctx context.Context, req *Request) (any, error) { return strings.Repeat("b", 2048), nil },
	})
	server := NewPeer(limitedConn{c1, 1024}, Options{Handler: h})
	client := NewPeer(limitedConn{c2, 1024})
	cleanupPeer(t, client)
	cleanupPeer(t, server)
	ctx := testCtx(t, wait)
	huge := []string{strings.Repeat("x", 2048)}
	if err := client.Call(ctx, "echo", huge, nil); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("Call over the limit = %v, want ErrMessageTooLarge", err)
	}
	if err := client.Notify(ctx, "echo", huge); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("Notify over the limit = %v, want ErrMessageTooLarge", err)
	}
	if err := client.Batch(ctx, []BatchElem{{Method: "echo", Params: huge}}); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("Batch over the limit = %v, want ErrMessageTooLarge", err)
	}
	err := client.Call(ctx, "big", nil, nil)
	if code := errorCode(t, err); code != CodeInternalError {
		t.Errorf("a reply over the limit came back as %v, want an Internal error", err)
	}
	var s []string
	if err := client.Call(ctx, "echo", []string{"ok"}, &s); err != nil {
		t.Errorf("the connection is not usable after the refusals: %v", err)
	}
}

// TestNullIDErrorFailsLoneCall: an error reply with id null (the remote
// could not read the request's id: a parse error, a message too large)
// fails the pending call when only one message is outstanding, instead of
// being dropped as a stray while the caller waits for its whole ctx.
func TestNullIDErrorFailsLoneCall(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			c1, c2 := Pipe()
			client := NewPeer(c1)
			cleanupPeer(t, client)
			r := startRaw(t, c2)
			ctx := testCtx(t, wait)
			done := make(chan error, 1)
			go func() {
				if batch {
					elems := []BatchElem{{Method: "a"}, {Method: "b"}}
					err := client.Batch(ctx, elems)
					if err == nil {
						err = errors.Join(elems[0].Error, elems[1].Error)
					}
					done <- err
					return
				}
				done <- client.Call(ctx, "a", nil, nil)
			}()
			r.recv()
			r.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":"message too large"}}`)
			err := within(t, done, "the call's outcome")
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidRequest {
				t.Fatalf("got %v, want the -32600 error", err)
			}
		})
	}
}

// TestNullIDErrorUnattributedKeepsCallsWaiting: with calls from two
// messages outstanding, an id-null error cannot be attributed, and fails
// neither.
func TestNullIDErrorUnattributedKeepsCallsWaiting(t *testing.T) {
	c1, c2 := Pipe()
	client := NewPeer(c1)
	cleanupPeer(t, client)
	r := startRaw(t, c2)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- client.Call(ctx, "a", nil, nil) }()
	}
	r.recv()
	r.recv()
	r.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
	for range 2 {
		if err := within(t, done, "a call"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("call = %v, want its ctx's end", err)
		}
	}
}

// watchedConn is a Conn that can be told its remote side has gone, as a
// ws.Conn's keepalive finds while nobody reads it.
type watchedConn struct {
	Conn
	gone chan struct{}
}

var errTestGone = errors.New("test: the remote side went away")

func (c *watchedConn) Gone() <-chan struct{} { return c.gone }

func (c *watchedConn) GoneErr() error {
	select {
	case <-c.gone:
		return errTestGone
	default:
		return nil
	}
}

// TestPushBackSeesConnGone: a Peer that pushes back (its notification lane
// is held by a handler that waits on its ctx, and the budget is full) still
// learns that its connection has gone when the Conn says so: it ends, and
// the handler's ctx is cancelled (it never did).
func TestPushBackSeesConnGone(t *testing.T) {
	held := make(chan struct{})
	cancelled := make(chan struct{})
	var once sync.Once
	h := mux(t, map[string]HandlerFunc{"sub": func(ctx context.Context, req *Request) (any, error) {
		once.Do(func() {
			close(held)
			<-ctx.Done()
			close(cancelled)
		})
		return nil, nil
	}})
	c1, c2 := Pipe()
	wc := &watchedConn{Conn: c1, gone: make(chan struct{})}
	server := NewPeer(wc, Options{Handler: h, MaxQueuedBytes: 4096})
	cleanupPeer(t, server)
	client := NewPeer(c2)
	cleanupPeer(t, client)
	ctx := testCtx(t, wait)
	if err := client.Notify(ctx, "sub", nil); err != nil {
		t.Fatal(err)
	}
	within(t, held, "the subscription handler")
	pad := []string{strings.Repeat("x", 1000)}
	pushed := make(chan struct{})
	go func() {
		defer close(pushed)
		for range 20 { // 20 KB behind a 4 KiB budget: the server pushes back
			if client.Notify(ctx, "sub", pad) != nil {
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	close(wc.gone)
	within(t, server.Done(), "the server's end after its Conn said the remote had gone")
	within(t, cancelled, "the handler's ctx")
	if err := server.Wait(); !errors.Is(err, errTestGone) {
		t.Errorf("Wait = %v, want the Conn's cause", err)
	}
	client.Close()
	within(t, pushed, "the client's notifications")
}

// TestInterceptedBatchCtxEndIsItsError: when ctx ends while a later round
// of an intercepted Batch is unanswered, Batch returns ctx's error, not an
// element's error reply (it returned the -4321 of an element answered
// earlier; found by TestSim).
func TestInterceptedBatchCtxEndIsItsError(t *testing.T) {
	server := mux(t, map[string]HandlerFunc{
		"fail": func(ctx context.Context, req *Request) (any, error) { return nil, &Error{Code: 4321, Message: "no"} },
		"slow": func(ctx context.Context, req *Request) (any, error) { <-ctx.Done(); return nil, ctx.Err() },
	})
	delaySlow := func(ctx context.Context, info *CallInfo, next Invoker) (any, error) {
		if info.Method == "slow" {
			time.Sleep(10 * time.Millisecond) // past batchGather: a round of its own
		}
		return next(ctx)
	}
	_, client := newPair(t, server, nil, nil, &Options{Interceptors: []Interceptor{delaySlow}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	elems := []BatchElem{{Method: "fail"}, {Method: "slow"}}
	err := client.Batch(ctx, elems)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Batch = %v, want its ctx's end", err)
	}
	if code := errorCode(t, elems[0].Error); code != 4321 {
		t.Errorf("the answered element's error = %v, want its own reply", elems[0].Error)
	}
}

// TestPushBackOverPipeSeesClose: a Pipe is a Watcher, so a Peer that
// pushes back over one still ends when the other end closes (it never did;
// found by TestSim).
func TestPushBackOverPipeSeesClose(t *testing.T) {
	held := make(chan struct{})
	var once sync.Once
	h := mux(t, map[string]HandlerFunc{"sub": func(ctx context.Context, req *Request) (any, error) {
		once.Do(func() { close(held); <-ctx.Done() })
		return nil, nil
	}})
	c1, c2 := Pipe()
	server := NewPeer(c1, Options{Handler: h, MaxQueuedBytes: 4096})
	cleanupPeer(t, server)
	client := NewPeer(c2)
	ctx := testCtx(t, wait)
	if err := client.Notify(ctx, "sub", nil); err != nil {
		t.Fatal(err)
	}
	within(t, held, "the subscription handler")
	pad := []string{strings.Repeat("x", 1000)}
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for range 8 { // past the 4 KiB budget: the server pushes back
			if client.Notify(ctx, "sub", pad) != nil {
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	client.Close()
	within(t, flooded, "the client's notifications")
	within(t, server.Done(), "the server's end after the other end of its Pipe closed")
	if err := server.Wait(); err != nil {
		t.Errorf("Wait = %v, want nil: the other end closed cleanly", err)
	}
}
