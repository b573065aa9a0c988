package jsonrpc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The promise under test here: whatever way the connection fails (the link
// dropped mid-call or mid-batch, a Write failing or stuck), every pending
// Call and Batch returns within faultBound with an error wrapping ErrClosed
// and the cause, Wait returns the cause, and no goroutine is left behind
// (TestMain checks that).

// faultBound is how soon after a fault every waiting caller must return.
const faultBound = time.Second

var (
	errLinkDown    = errors.New("link down")
	errWriteBroken = errors.New("write broken")
)

// link is an in-memory connection, like Pipe, that a test can cut as a
// network failure would: from then on both ends' Reads and Writes fail with
// the cause. Closing either end ends both, as with Pipe, with io.EOF, unless
// the link was cut first.
type link struct {
	cut       chan struct{}
	cutOnce   sync.Once
	cause     error // set before cut is closed
	closed    chan struct{}
	closeOnce sync.Once
}

func newLink() (*link, Conn, Conn) {
	l := &link{cut: make(chan struct{}), closed: make(chan struct{})}
	a2b, b2a := make(chan []byte), make(chan []byte)
	return l, &linkEnd{l: l, in: b2a, out: a2b}, &linkEnd{l: l, in: a2b, out: b2a}
}

// sever cuts the link with cause.
func (l *link) sever(cause error) {
	l.cutOnce.Do(func() {
		l.cause = cause
		close(l.cut)
	})
}

// failure returns the error of an end that has failed: the cut's cause,
// which wins over a close that came after it, or io.EOF.
func (l *link) failure() error {
	select {
	case <-l.cut:
		return l.cause
	default:
		return io.EOF
	}
}

type linkEnd struct {
	l   *link
	in  <-chan []byte
	out chan<- []byte
}

func (e *linkEnd) Read() ([]byte, error) {
	select {
	case <-e.l.cut:
		return nil, e.l.cause
	default:
	}
	select {
	case msg := <-e.in:
		return msg, nil
	case <-e.l.cut:
		return nil, e.l.cause
	case <-e.l.closed:
		return nil, e.l.failure()
	}
}

func (e *linkEnd) Write(msg []byte) error {
	select {
	case <-e.l.cut:
		return e.l.cause
	case <-e.l.closed:
		return net.ErrClosed
	default:
	}
	select {
	case e.out <- append([]byte(nil), msg...):
		return nil
	case <-e.l.cut:
		return e.l.cause
	case <-e.l.closed:
		return net.ErrClosed
	}
}

func (e *linkEnd) Close() error {
	e.l.closeOnce.Do(func() { close(e.l.closed) })
	return nil
}

// outcome is what one waiting operation returned, and when.
type outcome struct {
	what string
	err  error
	at   time.Time
}

// checkFailedBy checks that o failed with ErrClosed wrapping cause, within
// faultBound of the fault.
func checkFailedBy(t *testing.T, o outcome, cause error, fault time.Time) {
	t.Helper()
	if !errors.Is(o.err, ErrClosed) || !errors.Is(o.err, cause) {
		t.Errorf("%s = %v, want ErrClosed wrapping %q", o.what, o.err, cause)
	}
	if d := o.at.Sub(fault); d > faultBound {
		t.Errorf("%s returned %v after the fault, want within %v", o.what, d, faultBound)
	}
}

// waitWithin returns p.Wait()'s result, failing the test unless it comes
// within faultBound.
func waitWithin(t *testing.T, name string, p *Peer) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- p.Wait() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(faultBound):
		t.Fatalf("%s Wait did not return within %v of the fault", name, faultBound)
		return nil
	}
}

// TestLinkCutMidCall cuts the link while both sides have handlers running
// and calls waiting: the client's Calls and Batches wait for server
// handlers, some of which wait in Calls back to the client's handlers.
// Every waiting call on both sides fails with the cause, every handler's
// ctx ends, and both Waits return the cause.
func TestLinkCutMidCall(t *testing.T) {
	const n = 4
	entered := make(chan string, 4*n)
	block := func(who string) HandlerFunc {
		return func(ctx context.Context, _ *Request) (any, error) {
			entered <- who
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	relayed := make(chan outcome, 2*n)
	serverH := mux(t, map[string]HandlerFunc{
		"block": block("server"),
		// relay waits in a Call back to the client's block.
		"relay": func(ctx context.Context, _ *Request) (any, error) {
			err := PeerFromContext(ctx).Call(ctx, "block", nil, nil)
			relayed <- outcome{"server handler's Call back to the client", err, time.Now()}
			return nil, err
		},
	})
	l, c1, c2 := newLink()
	client := NewPeer(c1, Options{Handler: mux(t, map[string]HandlerFunc{"block": block("client")})})
	server := NewPeer(c2, Options{Handler: serverH})
	cleanupPeer(t, client)
	cleanupPeer(t, server)

	ctx := testCtx(t, wait)
	out := make(chan outcome, 3*n)
	for range n {
		go func() { out <- outcome{"Call block", client.Call(ctx, "block", nil, nil), time.Now()} }()
		go func() { out <- outcome{"Call relay", client.Call(ctx, "relay", nil, nil), time.Now()} }()
		go func() {
			err := client.Batch(ctx, []BatchElem{{Method: "block"}, {Method: "relay"}, {Method: "note", Notification: true}})
			out <- outcome{"Batch", err, time.Now()}
		}()
	}
	// 2n server blocks (Calls and Batch elements), 2n client blocks (one
	// per relay): every handler on both sides is running or waiting.
	for range 4 * n {
		within(t, entered, "the handlers to start")
	}

	fault := time.Now()
	l.sever(errLinkDown)
	for range 3 * n {
		checkFailedBy(t, within(t, out, "the client's calls"), errLinkDown, fault)
	}
	for range 2 * n {
		checkFailedBy(t, within(t, relayed, "the server's calls back"), errLinkDown, fault)
	}
	for name, p := range map[string]*Peer{"client": client, "server": server} {
		if err := waitWithin(t, name, p); !errors.Is(err, errLinkDown) {
			t.Errorf("%s Wait = %v, want the cause %q", name, err, errLinkDown)
		}
	}
}

// passThrough is an interceptor that changes nothing, to send Batch down its
// intercepted path.
func passThrough(ctx context.Context, _ *CallInfo, next Invoker) (any, error) { return next(ctx) }

// TestLinkCutMidBatch cuts the link while a Batch has one reply and waits
// for two: it fails with the cause, and the element answered before the
// cut keeps its result.
func TestLinkCutMidBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *Options
	}{{"plain", nil}, {"intercepted", &Options{Interceptors: []Interceptor{passThrough}}}} {
		t.Run(tc.name, func(t *testing.T) {
			l, c1, c2 := newLink()
			r := startRaw(t, c2)
			p := NewPeer(c1, withHandler(tc.opts, nil))
			cleanupPeer(t, p)
			results := make([]string, 3)
			elems := []BatchElem{
				{Method: "a", Result: &results[0]},
				{Method: "note", Notification: true},
				{Method: "b", Result: &results[1]},
				{Method: "c", Result: &results[2]},
			}
			errc := make(chan outcome, 1)
			go func() { errc <- outcome{"Batch", p.Batch(testCtx(t, wait), elems), time.Now()} }()
			// Intercepted elements that reach the wire more than
			// batchGather apart (a loaded machine) go in separate arrays.
			var reqs []wire
			for len(reqs) < 4 {
				var part []wire
				if err := json.Unmarshal(r.recv(), &part); err != nil || len(part) == 0 {
					t.Fatalf("batch on the wire: %v, %d elements", err, len(part))
				}
				reqs = append(reqs, part...)
			}
			if len(reqs) != 4 {
				t.Fatalf("batch on the wire: %d elements, want 4", len(reqs))
			}
			slices.SortFunc(reqs, func(a, b wire) int { return cmp.Compare(a.Method, b.Method) })
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"zero"}`, reqs[0].ID))
			eventually(t, "the first reply to be taken", func() bool { return pendingLen(p) == 2 })

			fault := time.Now()
			l.sever(errLinkDown)
			checkFailedBy(t, within(t, errc, "Batch"), errLinkDown, fault)
			if elems[0].Error != nil || results[0] != "zero" {
				t.Errorf("element answered before the cut: %q, %v; want its result", results[0], elems[0].Error)
			}
			if err := waitWithin(t, "Peer", p); !errors.Is(err, errLinkDown) {
				t.Errorf("Wait = %v, want the cause %q", err, errLinkDown)
			}
			if n := pendingLen(p); n != 0 {
				t.Errorf("%d calls left pending", n)
			}
		})
	}
}

// scriptConn is a Conn under the test's control. Read returns what the test
// queues on in, until Close. Write hands each message to written, or fails
// with the error set by failWrites, or, after blockWrites, blocks until
// Close (ignoring its ctx, as a Conn may: Close must unblock it).
type scriptConn struct {
	in      chan []byte
	written chan []byte
	entered chan struct{} // a Write has begun
	closed  chan struct{}
	once    sync.Once

	mu       sync.Mutex
	writeErr error
	block    bool
	writes   atomic.Int64
}

func newScriptConn() *scriptConn {
	return &scriptConn{
		in:      make(chan []byte),
		written: make(chan []byte, 64),
		entered: make(chan struct{}, 64),
		closed:  make(chan struct{}),
	}
}

func (c *scriptConn) failWrites(err error) { c.mu.Lock(); c.writeErr = err; c.mu.Unlock() }
func (c *scriptConn) blockWrites()         { c.mu.Lock(); c.block = true; c.mu.Unlock() }

func (c *scriptConn) Read() ([]byte, error) {
	select {
	case msg := <-c.in:
		return msg, nil
	case <-c.closed:
		return nil, net.ErrClosed
	}
}

func (c *scriptConn) Write(msg []byte) error {
	c.writes.Add(1)
	select {
	case c.entered <- struct{}{}:
	default:
	}
	c.mu.Lock()
	err, block := c.writeErr, c.block
	c.mu.Unlock()
	switch {
	case block:
		<-c.closed
		return net.ErrClosed
	case err != nil:
		return err
	}
	select {
	case c.written <- append([]byte(nil), msg...):
		return nil
	case <-c.closed:
		return net.ErrClosed
	}
}

func (c *scriptConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// startOps starts, on goroutines, every kind of operation that waits for
// the connection: calls, a notification and a batch. Each reports on out.
func startOps(ctx context.Context, p *Peer, calls int, out chan<- outcome) int {
	for i := range calls {
		go func() {
			out <- outcome{fmt.Sprintf("Call %d", i), p.Call(ctx, "m", nil, nil), time.Now()}
		}()
	}
	go func() { out <- outcome{"Notify", p.Notify(ctx, "n", nil), time.Now()} }()
	go func() {
		out <- outcome{"Batch", p.Batch(ctx, []BatchElem{{Method: "m"}, {Method: "n", Notification: true}}), time.Now()}
	}()
	return calls + 2
}

// TestWriteFails: a Conn whose Write fails ends the Peer with the write's
// error as the cause: the failing call, the calls already waiting for
// replies and those waiting to write all fail with it.
func TestWriteFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trigger func(t *testing.T, c *scriptConn, p *Peer, out chan outcome) int
	}{
		{"a call's write", func(t *testing.T, c *scriptConn, p *Peer, out chan outcome) int {
			c.failWrites(errWriteBroken)
			return startOps(testCtx(t, wait), p, 3, out)
		}},
		{"a reply's write", func(t *testing.T, c *scriptConn, p *Peer, out chan outcome) int {
			c.failWrites(errWriteBroken)
			c.in <- []byte(`{"jsonrpc":"2.0","id":"in","method":"echo","params":[1]}`)
			return 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newScriptConn()
			p := NewPeer(c, Options{Handler: mux(t, map[string]HandlerFunc{"echo": echo})})
			cleanupPeer(t, p)
			out := make(chan outcome, 16)
			ctx := testCtx(t, wait)
			// Three calls written and waiting for replies that never come.
			n := 3
			for i := range n {
				go func() { out <- outcome{fmt.Sprintf("pending Call %d", i), p.Call(ctx, "m", nil, nil), time.Now()} }()
			}
			for range n {
				within(t, c.written, "the pending calls' requests")
			}

			fault := time.Now()
			n += tc.trigger(t, c, p, out)
			for range n {
				checkFailedBy(t, within(t, out, "the calls"), errWriteBroken, fault)
			}
			if err := waitWithin(t, "Peer", p); !errors.Is(err, errWriteBroken) {
				t.Errorf("Wait = %v, want the cause %q", err, errWriteBroken)
			}
			// Anything after the end fails the same way, without writing.
			before := c.writes.Load()
			o := outcome{"Call after the end", p.Call(ctx, "m", nil, nil), time.Now()}
			checkFailedBy(t, o, errWriteBroken, o.at)
			if c.writes.Load() != before {
				t.Error("a Call after the end reached the Conn")
			}
		})
	}
}

// TestWriteBlocked: a Write that never returns holds the write lock; the
// calls behind it and those waiting for replies all return promptly once
// the transport is closed under the Peer (they fail with the transport's
// error) or the Peer is closed (Close itself returns promptly too).
func TestWriteBlocked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   func(c *scriptConn, p *Peer)
		cause   error // what the failed operations must wrap
		waitErr error // what Wait must wrap; nil: Wait returns nil
	}{
		{"transport closed", func(c *scriptConn, _ *Peer) { c.Close() }, net.ErrClosed, net.ErrClosed},
		{"Peer closed", func(_ *scriptConn, p *Peer) { p.Close() }, errLocalClose, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newScriptConn()
			p := NewPeer(c)
			cleanupPeer(t, p)
			ctx := testCtx(t, wait)
			out := make(chan outcome, 16)
			// One call written and waiting for its reply, then a stuck
			// write, then calls, a notification and a batch queued behind
			// it.
			go func() { out <- outcome{"pending Call", p.Call(ctx, "m", nil, nil), time.Now()} }()
			within(t, c.written, "the first request")
			c.blockWrites()
			go func() { out <- outcome{"stuck Call", p.Call(ctx, "m", nil, nil), time.Now()} }()
			eventually(t, "the stuck write", func() bool { return c.writes.Load() == 2 })
			n := 2 + startOps(ctx, p, 3, out)
			eventually(t, "the calls queued behind the stuck write", func() bool { return pendingLen(p) == 6 })

			fault := time.Now()
			tc.fault(c, p)
			if d := time.Since(fault); d > faultBound {
				t.Errorf("the fault took %v", d)
			}
			for range n {
				checkFailedBy(t, within(t, out, "the calls"), tc.cause, fault)
			}
			err := waitWithin(t, "Peer", p)
			if tc.waitErr == nil && err != nil || tc.waitErr != nil && !errors.Is(err, tc.waitErr) {
				t.Errorf("Wait = %v, want %v", err, tc.waitErr)
			}
		})
	}
}
