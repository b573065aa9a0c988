package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

// callAsync runs p.Call(ctx, method, params, &string) on a goroutine.
func callAsync(p *Peer, ctx context.Context, method string, params any) <-chan callResult {
	c := make(chan callResult, 1)
	go func() {
		var r callResult
		r.err = p.Call(ctx, method, params, &r.s)
		c <- r
	}()
	return c
}

type callResult struct {
	s   string
	err error
}

// wire is a message as the test's raw end reads it.
type wire struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func parseWire(t testing.TB, b []byte) wire {
	t.Helper()
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("not a message object: %s", b)
	}
	return w
}

// lsp is the Options of the tests that use LSP's cancellation dialect.
var lsp = &Options{Cancel: LSPCancel}

// TestCallTimeout: a Call whose ctx ends returns promptly, the remote is
// told to cancel that id, and a late reply to it is dropped rather than
// handed to a later call.
func TestCallTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   *Options
		cancel string // "" when no cancel notification must be sent
	}{
		{"LSP", &Options{Cancel: LSPCancel}, "$/cancelRequest"},
		{"MCP", &Options{Cancel: MCPCancel}, "notifications/cancelled"},
		{"own dialect", &Options{Cancel: &CancelDialect{Method: "cancel/please",
			Params: LSPCancel.Params, ID: LSPCancel.ID}}, "cancel/please"},
		{"none by default", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, r := newRaw(t, nil, tc.opts)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			res := callAsync(p, ctx, "slow", nil)
			req := parseWire(t, r.recv())
			var got callResult
			select {
			case got = <-res:
			case <-time.After(wait):
				t.Fatal("Call did not return after its ctx ended")
			}
			if !errors.Is(got.err, context.DeadlineExceeded) || time.Since(start) > time.Second {
				t.Fatalf("Call: %v after %v", got.err, time.Since(start))
			}
			if tc.cancel != "" {
				c := parseWire(t, r.recv())
				if c.Method != tc.cancel || c.ID != nil {
					t.Fatalf("cancel notification: %+v", c)
				}
				id, ok := tc.opts.Cancel.ID(c.Params)
				if !ok || id.raw != string(req.ID) {
					t.Errorf("cancel params %s name %v, want id %s", c.Params, id, req.ID)
				}
			}
			// The late reply, then a new call that must get its own result.
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"late"}`, req.ID))
			res = callAsync(p, testCtx(t, wait), "next", nil)
			next := parseWire(t, r.recv()) // with NoCancel: no cancel came before it
			if next.Method != "next" || string(next.ID) == string(req.ID) {
				t.Fatalf("next request %+v reuses id %s", next, req.ID)
			}
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"own"}`, next.ID))
			if got := <-res; got.err != nil || got.s != "own" {
				t.Fatalf("next call: %q, %v", got.s, got.err)
			}
			if n := pendingLen(p); n != 0 {
				t.Errorf("%d calls still pending", n)
			}
		})
	}
}

// TestBatchTimeoutCancelsOutstanding: the elements without a reply when the
// batch's ctx ends are cancelled, the answered ones are not.
func TestBatchTimeoutCancelsOutstanding(t *testing.T) {
	p, r := newRaw(t, nil, lsp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- p.Batch(ctx, []BatchElem{{Method: "a"}, {Method: "n", Notification: true}, {Method: "b"}})
	}()
	var reqs []wire
	if err := json.Unmarshal(r.recv(), &reqs); err != nil || len(reqs) != 3 {
		t.Fatalf("batch: %v", err)
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":1}`, reqs[0].ID))
	eventually(t, "the first reply to be taken", func() bool { return pendingLen(p) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Batch: %v", err)
	}
	c := parseWire(t, r.recv())
	assertJSON(t, c.Params, fmt.Sprintf(`{"id":%s}`, reqs[2].ID))
	r.quiet(20 * time.Millisecond)
}

// TestIncomingCancel: a cancel notification cancels the ctx of the handler
// it names, and the call is answered with CodeRequestCancelled.
func TestIncomingCancel(t *testing.T) {
	entered := make(chan struct{}, 1)
	h := mux(t, map[string]HandlerFunc{"block": func(ctx context.Context, _ *Request) (any, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	for _, tc := range []struct{ name, id string }{{"number", "7"}, {"string", `"x\"y"`}} {
		t.Run(tc.name, func(t *testing.T) {
			_, r := newRaw(t, h, lsp)
			r.send(`{"jsonrpc":"2.0","id":` + tc.id + `,"method":"block"}`)
			within(t, entered, "the handler")
			r.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":99}}`) // no such call
			r.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + tc.id + `}}`)
			reply := r.recv()
			assertJSON(t, reply, `{"jsonrpc":"2.0","id":`+tc.id+`,"error":{"code":-32800,"message":"Request cancelled"}}`)
		})
	}
}

// TestCancelBetweenPeers: a Call abandoned by its caller cancels the
// remote handler's ctx.
func TestCancelBetweenPeers(t *testing.T) {
	cancelled := make(chan error, 1)
	h := mux(t, map[string]HandlerFunc{"block": func(ctx context.Context, _ *Request) (any, error) {
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	}})
	a, _ := newPair(t, nil, h, lsp, lsp)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := a.Call(ctx, "block", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call: %v", err)
	}
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler ctx: %v", err)
		}
	case <-time.After(wait):
		t.Fatal("the remote handler was not cancelled")
	}
}

// TestCancelQueuedCall: a call cancelled while queued never starts.
func TestCancelQueuedCall(t *testing.T) {
	release := make(chan struct{})
	started := make(chan string, 2)
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		started <- req.ID.String()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "ok", nil
	})
	_, r := newRaw(t, h, &Options{MaxConcurrent: 1, Cancel: LSPCancel})
	r.send(`{"jsonrpc":"2.0","id":1,"method":"m"}`)
	if id := within(t, started, "call 1"); id != "1" {
		t.Fatalf("started %s", id)
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"m"}`)
	r.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}`)
	r.sync()
	close(release)
	assertJSON(t, r.recv(), `{"jsonrpc":"2.0","id":1,"result":"ok"}`)
	assertJSON(t, r.recv(), `{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}}`)
	select {
	case id := <-started:
		t.Errorf("cancelled call %s started", id)
	default:
	}
}

// TestCallTimeoutRemoteNotReading is the regression test for a Call that
// outlived its ctx: it wrote its cancel notification itself, so it waited
// for a remote that was not reading.
func TestCallTimeoutRemoteNotReading(t *testing.T) {
	c1, c2 := Pipe()
	p := NewPeer(c1, *lsp)
	cleanupPeer(t, p)
	defer c2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res := callAsync(p, ctx, "slow", nil)
	if _, err := readWithin(c2, wait); err != nil { // the request; then read nothing
		t.Fatal(err)
	}
	select {
	case got := <-res:
		if !errors.Is(got.err, context.DeadlineExceeded) {
			t.Fatalf("Call: %v", got.err)
		}
	case <-time.After(time.Second):
		t.Fatal("Call waited for the remote to read its cancel notification")
	}
	msg, err := readWithin(c2, wait) // the cancel, written meanwhile
	if err != nil || parseWire(t, msg).Method != "$/cancelRequest" {
		t.Fatalf("after the Call: %s, %v", msg, err)
	}
}

// TestCancelInSameBatch: a cancel notification in the same batch as the
// call it names reaches that call (it is applied after the batch's work is
// taken), which then answers -32800.
func TestCancelInSameBatch(t *testing.T) {
	h := mux(t, map[string]HandlerFunc{"block": func(ctx context.Context, _ *Request) (any, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
			return "not cancelled", nil
		}
	}})
	_, raw := newRaw(t, h, lsp)
	got := raw.call(`[{"jsonrpc":"2.0","id":"b1","method":"block"},` +
		`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"b1"}}]`)
	assertJSON(t, got, `[{"jsonrpc":"2.0","id":"b1","error":{"code":-32800,"message":"Request cancelled"}}]`)
}

// TestIncomingCancelNoReply: with a dialect that asks for no reply to a
// cancelled call (MCP), the cancelled call gets none, and the next call is
// answered as usual.
func TestIncomingCancelNoReply(t *testing.T) {
	entered := make(chan struct{}, 1)
	h := mux(t, map[string]HandlerFunc{
		"block": func(ctx context.Context, _ *Request) (any, error) {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		},
		"ping": func(context.Context, *Request) (any, error) { return "pong", nil },
	})
	_, r := newRaw(t, h, &Options{Cancel: MCPCancel})
	r.send(`{"jsonrpc":"2.0","id":7,"method":"block"}`)
	within(t, entered, "the handler")
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"gone"}}`)
	r.quiet(50 * time.Millisecond)
	r.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	assertJSON(t, r.recv(), `{"jsonrpc":"2.0","id":8,"result":"pong"}`)
	r.quiet(20 * time.Millisecond)
}
