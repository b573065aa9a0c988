package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// blockMux serves "block", which signals entered and waits for its ctx.
func blockMux(t testing.TB, entered chan<- struct{}) *Mux {
	return mux(t, map[string]HandlerFunc{"block": func(ctx context.Context, _ *Request) (any, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}})
}

// TestClosePendingCalls: whichever side closes, every pending Call returns
// promptly with ErrClosed.
func TestClosePendingCalls(t *testing.T) {
	for _, side := range []string{"local", "remote"} {
		t.Run(side, func(t *testing.T) {
			const n = 5
			entered := make(chan struct{}, n)
			a, b := newPair(t, nil, blockMux(t, entered), nil, nil)
			ctx := testCtx(t, wait)
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for range n {
				wg.Add(1)
				go func() { defer wg.Done(); errs <- a.Call(ctx, "block", nil, nil) }()
			}
			for range n {
				within(t, entered, "the handlers")
			}
			start := time.Now()
			if side == "local" {
				a.Close()
			} else {
				b.Close()
			}
			wg.Wait()
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Errorf("pending calls took %v to fail", d)
			}
			close(errs)
			for err := range errs {
				if !errors.Is(err, ErrClosed) {
					t.Errorf("pending Call: %v, want ErrClosed", err)
				}
			}
		})
	}
}

// TestWaitAfterCleanEnd: Wait returns nil after Close, twice, and on the
// other side after it sees the stream end.
func TestWaitAfterCleanEnd(t *testing.T) {
	a, b := newPair(t, nil, nil, nil, nil)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for name, p := range map[string]*Peer{"local": a, "remote": b} {
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s Wait: %v", name, err)
			}
		case <-time.After(wait):
			t.Fatalf("%s Wait hung", name)
		}
		select {
		case <-p.Done():
		default:
			t.Errorf("%s Done not closed", name)
		}
	}
}

// TestUseAfterClose: every operation fails with ErrClosed.
func TestUseAfterClose(t *testing.T) {
	a, _ := newPair(t, nil, nil, nil, nil)
	a.Close()
	ctx := testCtx(t, wait)
	for name, err := range map[string]error{
		"Call":                   a.Call(ctx, "x", nil, nil),
		"Notify":                 a.Notify(ctx, "x", nil),
		"Batch":                  a.Batch(ctx, []BatchElem{{Method: "x"}}),
		"Batch of notifications": a.Batch(ctx, []BatchElem{{Method: "x", Notification: true}}),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestCloseFromHandler: a handler may Close its own Peer; nothing
// deadlocks, its caller sees the connection end, and both Waits return.
func TestCloseFromHandler(t *testing.T) {
	closed := make(chan error, 1)
	h := mux(t, map[string]HandlerFunc{"bye": func(ctx context.Context, _ *Request) (any, error) {
		closed <- PeerFromContext(ctx).Close()
		return "bye", nil
	}})
	a, b := newPair(t, nil, h, nil, nil)
	err := a.Call(testCtx(t, wait), "bye", nil, nil)
	if !errors.Is(err, ErrClosed) {
		t.Errorf("Call: %v, want ErrClosed", err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close in handler: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("Close in a handler deadlocked")
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- b.Wait() }()
	if err := within(t, waitErr, "Wait"); err != nil {
		t.Errorf("Wait: %v", err)
	}
}

// TestStrayReplies: replies for unknown ids, duplicate replies and
// malformed replies are dropped, and the Peer goes on working.
func TestStrayReplies(t *testing.T) {
	p, r := newRaw(t, nil, nil)
	res := callAsync(p, testCtx(t, wait), "m", nil)
	req := parseWire(t, r.recv())
	for _, stray := range []string{
		`{"jsonrpc":"2.0","id":424242,"result":"unknown"}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","result":"id as a string"}`, req.ID),
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":1,"error":{"code":1,"message":"both"}}`, req.ID),
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":1.5,"message":"bad code"}}`, req.ID),
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":"not an object"}`, req.ID),
		fmt.Sprintf(`{"jsonrpc":"1.0","id":%s,"result":"old version"}`, req.ID),
		`{"jsonrpc":"2.0","result":"no id"}`,
	} {
		r.send(stray)
	}
	reply := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"first"}`, req.ID)
	r.send(reply)
	r.send(reply) // duplicate
	r.send(fmt.Sprintf(`[%s,%s]`, reply, reply))
	if got := <-res; got.err != nil || got.s != "first" {
		t.Fatalf("Call: %q, %v", got.s, got.err)
	}
	r.quiet(20 * time.Millisecond) // no reply to any reply
	res = callAsync(p, testCtx(t, wait), "m", nil)
	req = parseWire(t, r.recv())
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"second"}`, req.ID))
	if got := <-res; got.err != nil || got.s != "second" {
		t.Fatalf("second Call: %q, %v", got.s, got.err)
	}
}

// TestEndCauses: Wait reports why a connection ended when it was not clean.
func TestEndCauses(t *testing.T) {
	c1, c2 := Pipe()
	p := NewPeer(failingConn{Conn: c1}, nil, nil)
	cleanupPeer(t, p)
	c2.Close()
	waitErr := make(chan error, 1)
	go func() { waitErr <- p.Wait() }()
	err := within(t, waitErr, "Wait")
	if err == nil || !errors.Is(err, errBroken) {
		t.Errorf("Wait: %v, want the read error", err)
	}
	if err := p.Call(testCtx(t, wait), "x", nil, nil); !errors.Is(err, ErrClosed) || !errors.Is(err, errBroken) {
		t.Errorf("Call after a failed read: %v", err)
	}
}

var errBroken = errors.New("broken")

// failingConn fails its reads once the underlying Conn has ended.
type failingConn struct{ Conn }

func (c failingConn) Read(ctx context.Context) ([]byte, error) {
	msg, err := c.Conn.Read(ctx)
	if err != nil {
		return nil, errBroken
	}
	return msg, nil
}

// tooLargeConn reports the message "TOO LARGE" as skipped for its size.
type tooLargeConn struct{ Conn }

func (c tooLargeConn) Read(ctx context.Context) ([]byte, error) {
	msg, err := c.Conn.Read(ctx)
	if err == nil && string(msg) == "TOO LARGE" {
		return nil, fmt.Errorf("frame of 1 GB: %w", ErrMessageTooLarge)
	}
	return msg, err
}

// TestMessageTooLarge: a message the Conn skipped for its size gets one
// Invalid Request error with id null, and the Peer goes on reading.
func TestMessageTooLarge(t *testing.T) {
	c1, c2 := Pipe()
	r := startRaw(t, c2)
	cleanupPeer(t, NewPeer(tooLargeConn{c1}, specMux(t), nil))
	reply := r.call("TOO LARGE")
	if string(rawMember(t, reply, "id")) != "null" || string(rawMember(t, rawMember(t, reply, "error"), "code")) != "-32600" {
		t.Fatalf("reply %s", reply)
	}
	assertJSON(t, r.call(`{"jsonrpc":"2.0","id":1,"method":"get_data"}`), `{"jsonrpc":"2.0","id":1,"result":["hello",5]}`)
}

// TestWriteTimeoutEndsPeer: a remote side that takes nothing (a Pipe end
// nobody reads) ends the Peer after Options.WriteTimeout, with a cause
// saying so, instead of holding its writer forever.
func TestWriteTimeoutEndsPeer(t *testing.T) {
	c1, c2 := Pipe()
	defer c2.Close()
	p := NewPeer(c1, nil, &Options{WriteTimeout: 100 * time.Millisecond})
	cleanupPeer(t, p)
	start := time.Now()
	err := p.Notify(testCtx(t, wait), "x", nil)
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("Notify to a remote that never reads = %v, want ErrClosed", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Errorf("the write ended after %v, want just over 100ms", d)
	}
	if err := p.Wait(); !errors.Is(err, ErrWriteTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v, want ErrWriteTimeout and context.DeadlineExceeded", err)
	}
}
