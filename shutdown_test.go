package jsonrpc

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// errConn is a Pipe end whose Close reports an error, as a child process's
// exit status is reported.
type errConn struct {
	Conn
	err error
}

func (c errConn) Close() error {
	c.Conn.Close()
	return c.err
}

// TestCloseReturnsConnError pins part of issue 9's finding 6: Close always
// returned nil, swallowing what closing the Conn said (a child's exit
// status). It returns that now, on every call, and so does Shutdown.
func TestCloseReturnsConnError(t *testing.T) {
	exit := errors.New("exit status 3")
	for _, shutdown := range []bool{false, true} {
		c1, c2 := Pipe()
		p := NewPeer(errConn{c1, exit})
		cleanupPeer(t, p)
		var err error
		if shutdown {
			err = p.Shutdown(testCtx(t, wait))
		} else {
			err = p.Close()
		}
		if err != exit {
			t.Errorf("shutdown %v: %v, want the Conn's %v", shutdown, err, exit)
		}
		if err := p.Close(); err != exit {
			t.Errorf("second Close = %v, want %v", err, exit)
		}
		c2.Close()
	}
}

// TestShutdownFromHandler pins part of finding 6: Shutdown called from a
// handler waited for that same handler, until its ctx ended. It now waits
// for the other handlers only, then closes.
func TestShutdownFromHandler(t *testing.T) {
	shut := make(chan error, 1)
	otherDone := make(chan struct{})
	server := mux(t, map[string]HandlerFunc{
		"other": func(ctx context.Context, _ *Request) (any, error) {
			time.Sleep(50 * time.Millisecond)
			close(otherDone)
			return "other", nil
		},
		"shutdown": func(ctx context.Context, _ *Request) (any, error) {
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			shut <- PeerFromContext(ctx).Shutdown(sctx)
			return nil, nil
		},
	})
	c, _ := newPair(t, nil, server, nil, nil)
	ctx := testCtx(t, wait)
	other := callAsync(c, ctx, "other", nil)
	time.Sleep(5 * time.Millisecond) // "other" first
	start := time.Now()
	res := callAsync(c, ctx, "shutdown", nil)
	if err := within(t, shut, "Shutdown from a handler"); err != nil {
		t.Errorf("Shutdown = %v, want nil", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Shutdown from a handler took %v: it waited for itself", d)
	}
	select {
	case <-otherDone:
	default:
		t.Error("Shutdown returned before the other handler was done")
	}
	if got := within(t, other, "the other call"); got.err != nil || got.s != "other" {
		t.Errorf("the other call = %q, %v; want its reply, written before the close", got.s, got.err)
	}
	if got := within(t, res, "the shutdown call"); !errors.Is(got.err, ErrClosed) {
		t.Errorf("the shutdown call = %v, want ErrClosed: its own reply is not sent", got.err)
	}
}

// TestShutdownWritesQueuedReplies: Shutdown closes only once the replies
// of the handlers it waited for have been written, not merely queued.
func TestShutdownWritesQueuedReplies(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	started := make(chan struct{})
	server := mux(t, map[string]HandlerFunc{"big": func(ctx context.Context, _ *Request) (any, error) {
		started <- struct{}{}
		time.Sleep(20 * time.Millisecond)
		return big, nil
	}})
	c, s := newPair(t, nil, server, nil, &Options{MaxOutboundBytes: 1 << 10})
	ctx := testCtx(t, wait)
	var results []<-chan callResult
	for range 4 {
		results = append(results, callAsync(c, ctx, "big", nil))
	}
	for range 4 {
		within(t, started, "the handlers")
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	for i, r := range results {
		if got := within(t, r, "a call"); got.err != nil || len(got.s) != len(big) {
			t.Errorf("call %d: %d bytes, %v; want its reply", i, len(got.s), got.err)
		}
	}
}

// TestNormalEventsNotWarned pins issue 9's finding 8 for the core: a call
// whose ctx expired (and its late -32800 reply), a remote side that ends
// its stream while a handler runs past DrainTimeout, and a link that drops
// are normal life: nothing is logged at Warn or above.
func TestNormalEventsNotWarned(t *testing.T) {
	logs := &logRecorder{}
	opts := &Options{Logger: slog.New(logs), DrainTimeout: 20 * time.Millisecond, Cancel: LSPCancel}
	slow := mux(t, map[string]HandlerFunc{"slow": func(ctx context.Context, _ *Request) (any, error) {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		return nil, ctx.Err()
	}})

	// A call given up, then answered late with -32800.
	c, s := newPair(t, nil, slow, opts, opts)
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if err := c.Call(cctx, "slow", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call = %v", err)
	}
	cancel()
	eventually(t, "the late reply", func() bool {
		return len(logs.find(slog.LevelDebug, "jsonrpc: dropped a late reply")) == 1
	})

	// The remote side ends its stream while a handler runs past the
	// drain timeout.
	callAsync(c, testCtx(t, wait), "slow", nil)
	time.Sleep(10 * time.Millisecond)
	c.Close()
	if err := within(t, waitErr(s), "the server"); err != nil {
		t.Errorf("server's Wait = %v, want nil after a clean end", err)
	}

	// A link that drops.
	l, c1, c2 := newLink()
	a, b := NewPeer(c1, withHandler(opts, nil)), NewPeer(c2, withHandler(opts, nil))
	cleanupPeer(t, a)
	cleanupPeer(t, b)
	l.sever(errors.New("connection reset by peer"))
	within(t, waitErr(a), "a")

	eventually(t, "b to end", func() bool { return len(logs.find(slog.LevelInfo, "jsonrpc: connection ended")) == 2 })
	if n := len(logs.find(slog.LevelInfo, "jsonrpc: handlers still running")); n != 1 {
		t.Errorf("%d Info records of the drain timeout, want 1", n)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, r := range logs.recs {
		if r.level >= slog.LevelWarn {
			t.Errorf("logged at %v: %s %v", r.level, r.msg, r.attrs)
		}
	}
}
