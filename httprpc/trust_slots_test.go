package httprpc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// TestDialCancelledCallsFreeSlots pins finding 3: in the MCP dialect a
// cancelled call gets no reply, and its stream held one of MaxInFlight's
// slots for the session's life; after 16 the next call waited for ever.
// Now a call cancelled gives its slot back at once: 40 cancelled calls,
// then a plain one that succeeds.
func TestDialCancelledCallsFreeSlots(t *testing.T) {
	started := make(chan struct{}, 64)
	m := testMux()
	m.HandleFunc("hold", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	opts := jsonrpc.Options{Handler: m, Cancel: jsonrpc.MCPCancel}
	ts := startSessions(t, &SessionServer{Peer: opts})
	c := ts.dial(t, nil, DialOptions{Peer: jsonrpc.Options{Cancel: jsonrpc.MCPCancel}})
	if err := c.Call(testCtx(t, wait), "echo", []int{0}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Call(ctx, "hold", nil, nil) }()
		within(t, started, "the held call's handler")
		cancel()
		if err := within(t, done, "the cancelled call"); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call %d: %v", i, err)
		}
	}
	if err := c.Call(testCtx(t, wait), "echo", []int{1}, nil); err != nil {
		t.Fatalf("a call after 40 cancelled ones: %v", err)
	}
}

// TestDialCallbacksDoNotDeadlock pins finding 4: calls whose server
// handlers call the client back (sampling, elicitation) need the client's
// replies, which took MaxInFlight slots that those calls held: 16 such
// calls at once failed (with the default MaxInFlight, 16). Now replies
// take no slot, and calls past MaxInFlight wait in a queue: 16 at once
// succeed, and 40 at once with MaxInFlight 4.
func TestDialCallbacksDoNotDeadlock(t *testing.T) {
	m := testMux()
	m.HandleFunc("callback", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		var s string
		err := jsonrpc.PeerFromContext(ctx).Call(ctx, "sample", nil, &s)
		return s, err
	})
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: m}})
	client := jsonrpc.NewMux()
	client.HandleFunc("sample", func(context.Context, *jsonrpc.Request) (any, error) {
		time.Sleep(time.Millisecond)
		return "sampled", nil
	})
	for _, tc := range []struct{ n, maxInFlight int }{{16, 0}, {40, 4}} {
		n := tc.n
		c := ts.dial(t, client, DialOptions{MaxInFlight: tc.maxInFlight})
		if err := c.Call(testCtx(t, wait), "echo", nil, nil); err != nil {
			t.Fatal(err)
		}
		ctx := testCtx(t, 3*wait)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				var s string
				if err := c.Call(ctx, "callback", nil, &s); err != nil || s != "sampled" {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("%d calls calling back at once: %v", n, err)
		}
	}
}
