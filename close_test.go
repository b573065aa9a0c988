package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
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
// malformed replies are dropped, each with a Warn record, and the Peer goes
// on working. (An error with id null fails the one call waiting: see
// TestNullIDErrorFailsLoneCall.)
func TestStrayReplies(t *testing.T) {
	logs := &logRecorder{}
	p, r := newRaw(t, nil, &Options{Logger: slog.New(logs)})
	res := callAsync(p, testCtx(t, wait), "m", nil)
	req := parseWire(t, r.recv())
	for _, stray := range []string{
		`{"jsonrpc":"2.0","id":424242,"result":"unknown"}`,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","result":"id as a string"}`, req.ID),
		`{"jsonrpc":"2.0","result":"no id"}`,
		`{"jsonrpc":"2.0","id":[1],"result":"an array id"}`,
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
	// Every stray was routed before the second reply: 2 for unknown ids
	// and 3 duplicates, and 2 without a usable id.
	if n := len(logs.find(slog.LevelWarn, droppedReply)); n != 5 {
		t.Errorf("%d Warn records of replies nobody waits for, want 5", n)
	}
	if n := len(logs.find(slog.LevelWarn, "jsonrpc: dropped a malformed response")); n != 2 {
		t.Errorf("%d Warn records of malformed replies, want 2", n)
	}
}

// TestEndCauses: Wait reports why a connection ended when it was not clean.
func TestEndCauses(t *testing.T) {
	c1, c2 := Pipe()
	p := NewPeer(failingConn{Conn: c1})
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

func (c failingConn) Read() ([]byte, error) {
	msg, err := c.Conn.Read()
	if err != nil {
		return nil, errBroken
	}
	return msg, nil
}

// tooLargeConn reports the message "TOO LARGE" as skipped for its size.
type tooLargeConn struct{ Conn }

func (c tooLargeConn) Read() ([]byte, error) {
	msg, err := c.Conn.Read()
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
	cleanupPeer(t, NewPeer(tooLargeConn{c1}, Options{Handler: specMux(t)}))
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
	p := NewPeer(c1, Options{WriteTimeout: 100 * time.Millisecond})
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

// TestCloseRace closes Peers while 50 goroutines call, notify and batch on
// them and the other side calls, notifies and batches back (with handlers
// calling back in turn), for 200 rounds or a time cap. Whichever side
// closes (or both, or one shuts down), nothing panics or deadlocks, every
// operation returns its own result or an error wrapping ErrClosed and the
// cause, and both Waits return.
func TestCloseRace(t *testing.T) {
	const (
		rounds     = 200
		goroutines = 50
		opsEach    = 6
		timeCap    = 6 * time.Second
	)
	h := mux(t, map[string]HandlerFunc{
		"echo": echo,
		"note": func(context.Context, *Request) (any, error) { return nil, nil },
		// back calls the caller's echo and returns what it got.
		"back": func(ctx context.Context, req *Request) (any, error) {
			var got json.RawMessage
			err := PeerFromContext(ctx).Call(ctx, "echo", req.Params, &got)
			return got, err
		},
	})
	deadline := time.Now().Add(timeCap)
	round := 0
	for ; round < rounds && time.Now().Before(deadline) && !t.Failed(); round++ {
		closeRaceRound(t, round, goroutines, opsEach, h)
	}
	t.Logf("%d rounds of %d goroutines", round, goroutines)
}

func closeRaceRound(t *testing.T, round, goroutines, opsEach int, h Handler) {
	c1, c2 := Pipe()
	a, b := NewPeer(c1, Options{Handler: h}), NewPeer(c2, Options{Handler: h})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	mode := round % 4 // 0: a closes, 1: b closes, 2: both, 3: a shuts down while b closes
	shutdown := mode == 3

	// check accepts an operation's outcome: its own result, or the end of
	// the connection with its cause (and, while a side shuts down, the
	// refusal of calls that reach it).
	check := func(what string, err error, ok bool) {
		switch {
		case err == nil && ok:
		case err == nil:
			t.Errorf("round %d: %s: wrong result", round, what)
		case errors.Is(err, ErrClosed):
			if !errors.Is(err, errLocalClose) && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.Errorf("round %d: %s = %v: ErrClosed without its cause", round, what, err)
			}
		case shutdown && errors.Is(err, &Error{Code: CodeShuttingDown}):
		default:
			t.Errorf("round %d: %s = %v, want its result or ErrClosed", round, what, err)
		}
	}
	var done atomic.Int64 // operations finished
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range opsEach {
				want := fmt.Sprintf("[%d,%d,%d]", round, g, i)
				params := json.RawMessage(want)
				var got json.RawMessage
				var err error
				var what string
				switch (g + i) % 6 {
				case 0:
					what, err = "a.Call", a.Call(ctx, "echo", params, &got)
					check(what, err, string(got) == want)
				case 1:
					what, err = "a.Notify", a.Notify(ctx, "note", params)
					check(what, err, true)
				case 2:
					var r0, r2 json.RawMessage
					elems := []BatchElem{
						{Method: "echo", Params: params, Result: &r0},
						{Method: "note", Params: params, Notification: true},
						{Method: "back", Params: params, Result: &r2},
					}
					what, err = "a.Batch", a.Batch(ctx, elems)
					// While a shuts down, b's back handler may be refused
					// by a, and return that refusal as its error.
					refused := shutdown && errors.Is(elems[2].Error, &Error{Code: CodeShuttingDown})
					check(what, err, string(r0) == want && elems[0].Error == nil &&
						(string(r2) == want && elems[2].Error == nil || refused))
				case 3: // incoming to a
					what, err = "b.Call", b.Call(ctx, "echo", params, &got)
					check(what, err, string(got) == want)
				case 4: // a's call whose handler calls a back
					what, err = "a.Call back", a.Call(ctx, "back", params, &got)
					check(what, err, string(got) == want)
				case 5: // incoming to a, calling b back
					what, err = "b.Call back", b.Call(ctx, "back", params, &got)
					if err == nil {
						err = b.Notify(ctx, "note", params)
					}
					check(what, err, string(got) == want)
				}
				done.Add(1)
				if err != nil {
					return
				}
			}
		}()
	}
	// Close once a random number of operations has finished (none, for a
	// quarter of the rounds), from several goroutines at once.
	after := int64(rand.IntN(goroutines * opsEach / 2))
	if round%8 < 2 {
		after = 0
	}
	for done.Load() < after && ctx.Err() == nil {
		runtime.Gosched()
	}
	var closers sync.WaitGroup
	for i := range 3 {
		closers.Add(1)
		go func() {
			defer closers.Done()
			switch {
			case mode == 0 || mode == 2 && i != 1:
				a.Close()
			case mode == 1 || mode == 2:
				b.Close()
			case i == 0:
				sctx, scancel := context.WithTimeout(ctx, time.Millisecond)
				defer scancel()
				a.Shutdown(sctx)
			default:
				b.Close()
			}
		}()
	}
	finished := make(chan struct{})
	go func() { closers.Wait(); wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(wait):
		t.Fatalf("round %d: operations or Close still running %v after Close", round, wait)
	}
	for name, p := range map[string]*Peer{"a": a, "b": b} {
		p.Close() // the side that did not close sees the end by itself; this makes sure
		waitErr := make(chan error, 1)
		go func() { waitErr <- p.Wait() }()
		select {
		case err := <-waitErr:
			// A side may fail to write before it reads the other's
			// clean end: that is a write error, not a clean end.
			if err != nil && !errors.Is(err, net.ErrClosed) {
				t.Errorf("round %d: %s.Wait = %v", round, name, err)
			}
		case <-time.After(wait):
			t.Fatalf("round %d: %s.Wait hung", round, name)
		}
	}
}

// TestServe: Serve reads on the calling goroutine, calls ready before
// anything is read, and returns when the connection has ended; a ready
// that closes the Peer makes Serve return at once.
func TestServe(t *testing.T) {
	c1, c2 := Pipe()
	client := NewPeer(c2)
	cleanupPeer(t, client)
	setUp := false
	h := mux(t, map[string]HandlerFunc{"ready": func(ctx context.Context, _ *Request) (any, error) {
		return setUp, nil // written by ready, before anything was read
	}})
	served := make(chan error, 1)
	go func() { served <- Serve(c1, Options{Handler: h, OnConnect: func(*Peer) { setUp = true }}) }()
	var ok bool
	if err := client.Call(testCtx(t, wait), "ready", nil, &ok); err != nil || !ok {
		t.Fatalf("ready = %v, %v", ok, err)
	}
	client.Close()
	if err := within(t, served, "Serve's return"); err != nil {
		t.Errorf("Serve = %v, want nil after a clean end", err)
	}

	c3, c4 := Pipe()
	defer c4.Close()
	go func() { served <- Serve(c3, Options{OnConnect: func(p *Peer) { p.Close() }}) }()
	if err := within(t, served, "Serve's return after Close in ready"); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}
