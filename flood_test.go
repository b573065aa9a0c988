package jsonrpc_test

import (
	"context"
	"errors"

	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
	"github.com/peerwire/jsonrpc/ws"
)

// The tests here drive two Peers at each other over real transports, each
// side flooding the other while its handlers write back: the shape that
// deadlocked (issue 9, finding 1).

// pair connects two Peers, a and b, over one transport. Both are closed
// when the test ends.
type pairFunc func(t *testing.T, ha, hb jsonrpc.Handler, o jsonrpc.Options) (a, b *jsonrpc.Peer)

var transports = []struct {
	name string
	pair pairFunc
}{
	{"pipe", pipePair},
	{"stdio-tcp", stdioTCPPair},
	{"websocket", wsPair},
}

func pipePair(t *testing.T, ha, hb jsonrpc.Handler, o jsonrpc.Options) (*jsonrpc.Peer, *jsonrpc.Peer) {
	c1, c2 := jsonrpc.Pipe()
	a, b := jsonrpc.NewPeer(c1, serving(o, ha)), jsonrpc.NewPeer(c2, serving(o, hb))
	closeAtEnd(t, a, b)
	return a, b
}

// stdioTCPPair runs line-framed stdio Conns over a loopback TCP connection.
func stdioTCPPair(t *testing.T, ha, hb jsonrpc.Handler, o jsonrpc.Options) (*jsonrpc.Peer, *jsonrpc.Peer) {
	return stdioFramedPair(t, ha, hb, o, stdio.Line)
}

// stdioFramedPair runs stdio Conns with framing f over a loopback TCP
// connection.
func stdioFramedPair(t *testing.T, ha, hb jsonrpc.Handler, o jsonrpc.Options, f stdio.Framing) (*jsonrpc.Peer, *jsonrpc.Peer) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c1, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c2 := <-accepted
	if c2 == nil {
		t.Fatal("accept failed")
	}
	so := stdio.Options{Framing: f}
	a := jsonrpc.NewPeer(stdio.NewConn(c1, c1, so), serving(o, ha))
	b := jsonrpc.NewPeer(stdio.NewConn(c2, c2, so), serving(o, hb))
	closeAtEnd(t, a, b)
	return a, b
}

// wsPair dials a ws.Server on loopback: a is the client, b the server side.
func wsPair(t *testing.T, ha, hb jsonrpc.Handler, o jsonrpc.Options) (*jsonrpc.Peer, *jsonrpc.Peer) {
	peers := make(chan *jsonrpc.Peer, 1)
	srv := &ws.Server{Peer: serving(o, hb), OnConnect: func(p *jsonrpc.Peer, _ *http.Request) { peers <- p }}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		hs.Close()
	})
	a, err := ws.Dial(context.Background(), "ws"+strings.TrimPrefix(hs.URL, "http"), ws.DialOptions{Peer: serving(o, ha)})
	if err != nil {
		t.Fatal(err)
	}
	b := <-peers
	closeAtEnd(t, a)
	return a, b
}

// serving returns o serving h.
func serving(o jsonrpc.Options, h jsonrpc.Handler) jsonrpc.Options {
	o.Handler = h
	return o
}

func closeAtEnd(t *testing.T, peers ...*jsonrpc.Peer) {
	t.Cleanup(func() {
		for _, p := range peers {
			p.Close()
		}
		for _, p := range peers {
			done := make(chan struct{})
			go func() { p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Errorf("Peer.Wait did not return within 5 s of Close")
			}
		}
	})
}

// pingPong is a handler whose ping notification answers with a pong
// notification on the same Peer (as a server publishing diagnostics for
// every didChange), and whose pongs are counted.
type pingPong struct {
	pongs atomic.Int64
	calls atomic.Int64
}

func (pp *pingPong) ServeRPC(ctx context.Context, r *jsonrpc.Request) (any, error) {
	switch r.Method {
	case "ping":
		return nil, jsonrpc.PeerFromContext(ctx).Notify(ctx, "pong", r.Params)
	case "pong":
		pp.pongs.Add(1)
		return nil, nil
	case "call": // a call whose handler calls back the caller
		pp.calls.Add(1)
		// The callback's refusal (CodeOverloaded) is passed on as is, on
		// purpose: the caller counts it as a refusal.
		return r.Params, jsonrpc.Forward(jsonrpc.PeerFromContext(ctx).Call(ctx, "echo", r.Params, nil))
	case "echo":
		return r.Params, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
}

// TestMutualNotifyFloodCompletes pins issue 9's finding 1: two Peers whose
// notification handlers notify each other back, 20,000 pings each way over
// a Pipe under default Options, used to stop after a few thousand, each
// read loop waiting for room in its own queue while its handler waited to
// write to the other. Every ping now gets its pong.
func TestMutualNotifyFloodCompletes(t *testing.T) {
	const n = 20000
	ha, hb := &pingPong{}, &pingPong{}
	a, b := pipePair(t, ha, hb, jsonrpc.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range []*jsonrpc.Peer{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				if err := p.Notify(ctx, "ping", []int{i}); err != nil {
					t.Errorf("ping %d: %v", i, err)
					return
				}
			}
		}()
	}
	watchProgress(t, ctx, "pongs", func() int64 { return ha.pongs.Load() + hb.pongs.Load() }, 2*n)
	wg.Wait()
}

// watchProgress waits until count reaches want, failing the test (with the
// goroutines' stacks) if it stops moving for 5 s or ctx ends: a stall.
func watchProgress(t *testing.T, ctx context.Context, what string, count func() int64, want int64) {
	t.Helper()
	last, lastMove := count(), time.Now()
	for {
		c := count()
		switch {
		case c >= want:
			return
		case c != last:
			last, lastMove = c, time.Now()
		case time.Since(lastMove) > 5*time.Second || ctx.Err() != nil:
			buf := make([]byte, 1<<20)
			t.Fatalf("stalled at %d of %d %s\n%s", c, want, what, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMutualFloodMixed: both sides flood each other with notifications
// (whose handlers notify back), calls (whose handlers call back) and
// batches, with budgets small enough that every limit is hit, over each
// transport. Each side either completes (every call answered, or refused
// with CodeOverloaded) or the connection ends with a documented cause
// (ErrOverloaded, ErrSlowConsumer), within a bounded time: it never
// stalls.
func TestMutualFloodMixed(t *testing.T) {
	opts := jsonrpc.Options{
		MaxConcurrent:    4,
		MaxQueued:        32,
		MaxQueuedBytes:   32 << 10,
		MaxOutboundBytes: 32 << 10,
		BatchConcurrency: 4,
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			ha, hb := &pingPong{}, &pingPong{}
			a, b := tr.pair(t, ha, hb, opts)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			pad := strings.Repeat("x", 2048)
			const workers, rounds = 16, 100
			var ops atomic.Int64 // operations finished, for the stall watch
			var ended atomic.Bool
			var refused atomic.Int64
			var wg sync.WaitGroup
			for _, p := range []*jsonrpc.Peer{a, b} {
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range rounds {
							err := floodStep(ctx, p, (w+i)%3, pad)
							ops.Add(1)
							switch {
							case err == nil:
							case errors.Is(err, &jsonrpc.Error{Code: jsonrpc.CodeOverloaded}):
								refused.Add(1)
							case errors.Is(err, jsonrpc.ErrClosed):
								ended.Store(true)
								return
							default:
								t.Errorf("%v", err)
								return
							}
						}
					}()
				}
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			watchProgress(t, ctx, "operations", func() int64 {
				select {
				case <-done:
					return 2 * workers * rounds
				default:
					return ops.Load()
				}
			}, 2*workers*rounds)
			if ended.Load() {
				// One side ended it with a documented cause; the other
				// saw its stream end.
				var causes []error
				documented := false
				for _, p := range []*jsonrpc.Peer{a, b} {
					select {
					case <-p.Done():
					case <-time.After(5 * time.Second):
						t.Fatal("an operation failed with ErrClosed, but its Peer has not ended")
					}
					err := p.Wait()
					causes = append(causes, err)
					documented = documented || errors.Is(err, jsonrpc.ErrOverloaded) || errors.Is(err, jsonrpc.ErrSlowConsumer)
				}
				if !documented {
					t.Errorf("the connection ended with %v, want a cause wrapping ErrOverloaded or ErrSlowConsumer", causes)
				}
			}
			t.Logf("%d operations, %d refused as overloaded; pongs %d/%d, calls served %d/%d; ended early: %v",
				ops.Load(), refused.Load(), ha.pongs.Load(), hb.pongs.Load(), ha.calls.Load(), hb.calls.Load(), ended.Load())
			if refused.Load() == 0 && !ended.Load() {
				t.Errorf("no limit was hit: make the flood heavier")
			}
		})
	}
}

// floodStep makes one operation of kind k on p.
func floodStep(ctx context.Context, p *jsonrpc.Peer, k int, pad string) error {
	switch k {
	case 0:
		return p.Notify(ctx, "ping", []string{pad})
	case 1:
		return p.Call(ctx, "call", []string{pad}, nil)
	default:
		elems := []jsonrpc.BatchElem{
			{Method: "echo", Params: []string{pad}},
			{Method: "ping", Params: []string{pad}, Notification: true},
			{Method: "call", Params: []string{pad}},
		}
		if err := p.Batch(ctx, elems); err != nil {
			return err
		}
		for _, e := range elems {
			if e.Error != nil {
				return e.Error
			}
		}
		return nil
	}
}
