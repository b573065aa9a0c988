//go:build !js

package ws_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// TestMemNetEcho: the in-memory network carries a call each way.
func TestMemNetEcho(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := startMemServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}})
		client, server := ms.dial(t, ws.DialOptions{Peer: jsonrpc.Options{Handler: testMux(t)}})
		var got []int
		must(t, client.Call(t.Context(), "echo", []int{1}, &got))
		must(t, server.Call(t.Context(), "echo", []int{2}, &got))
		if len(got) != 1 || got[0] != 2 {
			t.Errorf("echo = %v", got)
		}
	})
}

// pushBack is what the pushing side serves: "build", a notification whose
// handler holds the (ordered) notifications until release is closed, as a
// long build after didSave does; "change", a notification it counts; and
// "echo".
type pushBack struct {
	release chan struct{}
	changes atomic.Int64
	mux     *jsonrpc.Mux
}

func newPushBack() *pushBack {
	pb := &pushBack{release: make(chan struct{}), mux: jsonrpc.NewMux()}
	pb.mux.HandleFunc("build", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		select {
		case <-pb.release:
		case <-ctx.Done():
		}
		return nil, nil
	})
	pb.mux.HandleFunc("change", func(context.Context, *jsonrpc.Request) (any, error) {
		pb.changes.Add(1)
		return nil, nil
	})
	pb.mux.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		return r.Params, nil
	})
	return pb
}

// pushBackOptions make a Peer push back after 16 KiB of notifications.
var pushBackOptions = jsonrpc.Options{MaxQueuedBytes: 16 << 10}

// pushBackFor is how long the tests' pushing side pushes back: longer than
// PingInterval+PingTimeout with the default options (45 s), the bound in
// which a keepalive finds a silent remote side. The odd 100 ms keeps the
// end of the push-back off the instants at which a ping's time is up. On
// the fake clock the two would coincide exactly, and a ping waiting for
// the stuck write would then get the connection in the very instant its
// ctx ends, which makes coder/websocket close it (a race that real time
// all but never runs).
const pushBackFor = 60*time.Second + 100*time.Millisecond

// sendChanges makes the other side push back: from sends a "build" and
// then n changes of 8 KiB, each on a goroutine of its own (a Notify
// returns once its message is written), and waits until all are queued
// or written. The channel gets the first error, or nil once all are
// written.
func sendChanges(t *testing.T, from *jsonrpc.Peer, n int) <-chan error {
	t.Helper()
	must(t, from.Notify(t.Context(), "build", nil))
	errs := make(chan error, n)
	pad := []string{strings.Repeat("c", 8<<10)}
	for range n {
		go func() { errs <- from.Notify(context.Background(), "change", pad) }()
	}
	synctest.Wait() // every change queued, or written
	sent := make(chan error, 1)
	go func() {
		var first error
		for range n {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		sent <- first
	}()
	return sent
}

// holdsThrough checks that pinger keeps its connection to pusher while
// pusher pushes back for pushBackFor with a call of pinger's unanswered,
// and that once pusher's build ends the call is answered and all n
// changes are handled.
func holdsThrough(t *testing.T, pinger, pusher *jsonrpc.Peer, pb *pushBack, n int, sent <-chan error) {
	t.Helper()
	type result struct {
		got []int
		err error
	}
	answered := make(chan result, 1)
	go func() {
		var r result
		r.err = pinger.Call(context.Background(), "echo", []int{7}, &r.got)
		answered <- r
	}()
	start := time.Now()
	ended := make(chan time.Duration, 2)
	for _, p := range []*jsonrpc.Peer{pinger, pusher} {
		go func() { <-p.Done(); ended <- time.Since(start) }()
	}
	time.Sleep(pushBackFor)
	for _, side := range []struct {
		name string
		p    *jsonrpc.Peer
	}{{"the pinging side", pinger}, {"the pushing side", pusher}} {
		select {
		case <-side.p.Done():
			t.Fatalf("%s ended %v into the push-back: %v", side.name, <-ended, side.p.Wait())
		default:
		}
	}
	if c := pb.changes.Load(); c != 0 {
		t.Fatalf("%d changes handled behind the build: the test's build did not hold them", c)
	}
	select {
	case r := <-answered:
		t.Fatalf("the call was answered during the push-back: %v, %v", r.got, r.err)
	default:
	}
	close(pb.release)
	if err := <-sent; err != nil {
		select {
		case <-pusher.Done():
			t.Fatalf("a change: %v; the pushing side ended with %v", err, pusher.Wait())
		default:
		}
		t.Fatalf("a change: %v", err)
	}
	r := <-answered
	if r.err != nil || len(r.got) != 1 || r.got[0] != 7 {
		t.Fatalf("the call after the push-back = %v, %v; want [7]", r.got, r.err)
	}
	for i := 0; i < 100 && pb.changes.Load() < int64(n); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if c := pb.changes.Load(); c != int64(n) {
		t.Errorf("%d of %d changes handled a second after the push-back", c, n)
	}
}

// TestKeepaliveKeepsServerThatPushesBack (issue 28, finding 11): a server
// whose Peer pushes back for 60 s behind a slow notification handler reads
// nothing, so it answers none of the client's pings; the client, with the
// default options, must not take it for gone (it did, after 45 s: "no pong
// within 15s"). The server's own probes, a ping a second while it pushes
// back, tell the client that it is there.
func TestKeepaliveKeepsServerThatPushesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pb := newPushBack()
		ms := startMemServer(t, &ws.Server{Peer: withHandler(&pushBackOptions, pb.mux)})
		client, server := ms.dial(t, ws.DialOptions{})
		holdsThrough(t, client, server, pb, 4, sendChanges(t, client, 4))
	})
}

// TestKeepaliveKeepsClientThatPushesBack (issue 28, finding 11), from the
// other end: a client that pushes back for 60 s is not dropped by the
// server's keepalive.
func TestKeepaliveKeepsClientThatPushesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pb := newPushBack()
		ms := startMemServer(t, &ws.Server{})
		client, server := ms.dial(t, ws.DialOptions{Peer: withHandler(&pushBackOptions, pb.mux)})
		holdsThrough(t, server, client, pb, 4, sendChanges(t, server, 4))
	})
}

// TestWritingToServerThatPushesBack (issue 28, finding 11): a client that
// goes on writing to a server that pushes back, more than the connection
// buffers, has a write stuck until the server reads again. The server's
// probes must not end the client then: answering a ping waits for the
// stuck write, and coder/websocket fails the read after 5 s of that (the
// client ended after 6 s: "failed to write control frame opPong: failed
// to acquire lock"). Nor may the client's own ping, which cannot be
// written, end it: with pings every 500 ms, one falls between two of the
// server's, a second apart.
func TestWritingToServerThatPushesBack(t *testing.T) {
	for name, opts := range map[string]ws.Options{
		"default":     {},
		"quick-pings": {PingInterval: 500 * time.Millisecond, PingTimeout: 3 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pb := newPushBack()
				ms := startMemServer(t, &ws.Server{Peer: withHandler(&pushBackOptions, pb.mux)})
				client, server := ms.dial(t, ws.DialOptions{Conn: opts})
				const n = 100 // 800 KiB, beyond the 2 x 256 KiB of buffers
				holdsThrough(t, client, server, pb, n, sendChanges(t, client, n))
			})
		})
	}
}

// TestKeepaliveFindsSilentServer: a server that reads nothing and sends
// nothing, not even a ping (gone without a word, or the connection
// half-open), is found by a client with the default options within
// PingInterval+PingTimeout of the last thing it sent: 45 s, here on the
// fake clock, and not sooner.
func TestKeepaliveFindsSilentServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := newMemListener()
		stop := make(chan struct{})
		var handlers sync.WaitGroup
		hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handlers.Add(1)
			defer handlers.Done()
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			<-stop // never reads, never writes
			c.CloseNow()
		})}
		served := make(chan error, 1)
		go func() { served <- hs.Serve(ln) }()
		tr := &http.Transport{DialContext: ln.dial}
		defer func() {
			close(stop)
			handlers.Wait()
			hs.Close()
			<-served
			tr.CloseIdleConnections()
		}()
		start := time.Now()
		client, err := ws.Dial(t.Context(), "ws://mem/rpc", ws.DialOptions{HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		<-client.Done()
		d := time.Since(start)
		if err := client.Wait(); !errors.Is(err, ws.ErrKeepalive) {
			t.Errorf("client Wait = %v, want it to wrap ErrKeepalive", err)
		}
		t.Logf("the silent server was found after %v", d)
		lo := ws.DefaultPingInterval + ws.DefaultPingTimeout
		if d != lo {
			t.Errorf("the silent server was found after %v, want %v", d, lo)
		}
	})
}
