//go:build !js

package ws_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// Loopback TCP buffers grow to megabytes, enough to hide a client that
// stopped reading behind a few thousand messages. These tests shrink them,
// on the server's connections (send) and on the stuck client's (receive), so
// that such a client is noticed after some tens of kilobytes.
func smallServerBuffers(hs *httptest.Server) {
	hs.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(8 << 10)
		}
		return ctx
	}
}

// stuckClient connects a raw client with a small receive buffer that never
// reads.
func (ts *testServer) stuckClient(t testing.TB) *websocket.Conn {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4 << 10)
		}
		return c, err
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return ts.rawDial(t, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
}

// ticker is a client that checks it receives tick notifications 0, 1, 2…
type ticker struct {
	next    atomic.Int64 // the seq expected next = ticks received in order
	badSeen atomic.Int64 // an out-of-order seq, plus one
}

func (tk *ticker) mux(t testing.TB) *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "tick", func(_ context.Context, p struct {
		Seq int64
		Pad string
	}) (any, error) {
		if !tk.next.CompareAndSwap(p.Seq, p.Seq+1) {
			tk.badSeen.CompareAndSwap(0, p.Seq+1)
		}
		return nil, nil
	})
	return m
}

// TestGroupSlowConsumer broadcasts 2,000 notifications of about 1 KiB to
// five clients, one of which never reads. The four others get every one in
// order; the stuck one is dropped with ErrSlowConsumer; Notify never blocks
// and the server's memory stays bounded.
//
// No write timeout is needed: dropping the stuck member ends its Peer, whose
// lifetime ctx bounds the blocked write, and coder/websocket then drops the
// connection at once (TestWriteTimeout covers the timeout on its own).
func TestGroupSlowConsumer(t *testing.T) {
	const (
		total    = 2000
		maxQueue = 64
		burst    = maxQueue / 2 // the healthy clients catch up between bursts
	)
	g := &jsonrpc.Group{MaxQueue: maxQueue}
	ts := startServer(t, &ws.Server{OnConnect: func(p *jsonrpc.Peer, _ *http.Request) { g.Add(p) }}, smallServerBuffers)
	ts.stuckClient(t)
	stuck := ts.nextPeer(t)
	tickers := make([]*ticker, 4)
	for i := range tickers {
		tickers[i] = &ticker{}
		ts.dial(t, tickers[i].mux(t), nil)
		ts.nextPeer(t)
	}
	if g.Len() != 5 {
		t.Fatalf("Group.Len = %d, want 5", g.Len())
	}

	var before, sample runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak := before.HeapAlloc
	pad := strings.Repeat("p", 1000)
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	var maxNotify time.Duration
	var droppedAt time.Duration
	for i := range total {
		t0 := time.Now()
		must(t, g.Notify("tick", []any{i, pad}))
		maxNotify = max(maxNotify, time.Since(t0))
		if droppedAt == 0 {
			select {
			case <-stuck.Done():
				droppedAt = time.Since(start)
			default:
			}
		}
		if (i+1)%burst != 0 && i != total-1 {
			continue
		}
		for _, tk := range tickers {
			for tk.next.Load() < int64(i+1) && tk.badSeen.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("a healthy client got %d of %d ticks", tk.next.Load(), i+1)
				}
				time.Sleep(time.Millisecond)
			}
		}
		if (i+1)%(8*burst) == 0 {
			runtime.ReadMemStats(&sample)
			peak = max(peak, sample.HeapAlloc)
		}
	}

	for i, tk := range tickers {
		if bad := tk.badSeen.Load(); bad != 0 {
			t.Errorf("client %d got tick %d out of order", i, bad-1)
		} else if n := tk.next.Load(); n != total {
			t.Errorf("client %d got %d ticks, want %d", i, n, total)
		}
	}
	err := waitErr(t, "stuck client's server Wait", stuck)
	if droppedAt == 0 {
		droppedAt = time.Since(start)
	}
	if !errors.Is(err, jsonrpc.ErrSlowConsumer) {
		t.Errorf("stuck client's server Wait = %v, want it to wrap ErrSlowConsumer", err)
	}
	if g.Len() != 4 {
		t.Errorf("Group.Len = %d after the drop, want 4", g.Len())
	}
	// A Notify that waited for the stuck member would wait for ever: the
	// member is dropped by a Notify that finds its queue full, so none
	// would be, and the healthy clients' wait above would time out. What
	// a Notify takes beyond that is scheduling and GC: a few ms, once
	// 602 ms under -race with other test binaries on 2 cores, so only a
	// bound far from both is checked here.
	if maxNotify >= 2*time.Second {
		t.Errorf("slowest Group.Notify took %v, want well under 2 s", maxNotify)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("stuck client dropped after %v; slowest Notify %v; heap %.1f MiB before, peak sample %.1f MiB, %.1f MiB after",
		droppedAt, maxNotify, mib(before.HeapAlloc), mib(peak), mib(after.HeapAlloc))
	if droppedAt > 5*time.Second {
		t.Errorf("stuck client dropped after %v, want within 5 s", droppedAt)
	}
	if peak > before.HeapAlloc+32<<20 || after.HeapAlloc > before.HeapAlloc+8<<20 {
		t.Errorf("heap grew from %d to a peak of %d (%d after GC)", before.HeapAlloc, peak, after.HeapAlloc)
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// TestWriteTimeout: without a Group, a Peer writing to a client that stopped
// reading blocks in Write until jsonrpc.Options.WriteTimeout ends the
// connection;
// the writer then gets ErrClosed and Wait reports the timeout.
func TestWriteTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{WriteTimeout: timeout}}, smallServerBuffers)
	ts.stuckClient(t)
	server := ts.nextPeer(t)

	pad := []string{strings.Repeat("w", 1000)}
	ctx := testCtx(t, wait)
	start := time.Now()
	var err error
	for i := 0; err == nil && i < 100_000 && ctx.Err() == nil; i++ {
		err = server.Notify(ctx, "fill", pad)
	}
	d := time.Since(start)
	if !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("Notify to a stuck client = %v after %v, want ErrClosed", err, d)
	}
	if d < timeout || d > timeout+2*time.Second {
		t.Errorf("writes failed after %v, want just over the %v WriteTimeout", d, timeout)
	}
	werr := waitErr(t, "server Wait", server)
	if !errors.Is(werr, jsonrpc.ErrWriteTimeout) || !errors.Is(werr, context.DeadlineExceeded) {
		t.Errorf("server Wait = %v, want it to wrap ErrWriteTimeout and context.DeadlineExceeded", werr)
	}
}
