package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
)

// registerByQuery is an onConnect that registers each connection under the
// name its upgrade request gives (?name=...).
func registerByQuery(n *cluster.Node, p *jsonrpc.Peer, r *http.Request) {
	if name := r.URL.Query().Get("name"); name != "" {
		n.Register(name, p)
	}
}

// page is a WebSocket client serving the methods a node calls on it.
type page struct {
	peer      *jsonrpc.Peer // the client
	srv       *jsonrpc.Peer // its server-side Peer
	started   chan struct{} // a "block" call began
	cancelled chan error    // a "block" call's ctx ended, with its error
	notes     chan string   // "hello" notifications' text
}

func openPage(t testing.TB, s *site, name string) *page {
	t.Helper()
	pg := &page{started: make(chan struct{}, 1), cancelled: make(chan error, 1), notes: make(chan string, 16)}
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "whoami", func(context.Context, any) (string, error) { return name, nil })
	jsonrpc.Register(mux, "echo", func(_ context.Context, p json.RawMessage) (json.RawMessage, error) { return p, nil })
	jsonrpc.Register(mux, "fail", func(context.Context, any) (any, error) {
		return nil, jsonrpc.NewError(4001, "not allowed", map[string]string{"why": "because"})
	})
	jsonrpc.Register(mux, "block", func(ctx context.Context, _ any) (any, error) {
		pg.started <- struct{}{}
		<-ctx.Done()
		pg.cancelled <- ctx.Err()
		return nil, ctx.Err()
	})
	jsonrpc.Register(mux, "hello", func(_ context.Context, p []string) (any, error) {
		pg.notes <- p[0]
		return nil, nil
	})
	pg.peer, pg.srv = dial(t, s, "name="+name, jsonrpc.Options{Handler: mux, Cancel: jsonrpc.LSPCancel})
	return pg
}

// TestCallAcrossNodes is the second "done when": a Peer registered
// by name on node B, called from node A.
func TestCallAcrossNodes(t *testing.T) {
	ns := startNATS(t, -1)
	a := newSite(t, ns.ClientURL(), cluster.Options{}, registerByQuery)
	b := newSite(t, ns.ClientURL(), cluster.Options{}, registerByQuery)
	pg := openPage(t, b, "alice")
	flush(t, b)
	ctx := testCtx(t, wait)

	t.Run("result", func(t *testing.T) {
		var who string
		if err := a.node.Call(ctx, "alice", "whoami", nil, &who); err != nil || who != "alice" {
			t.Fatalf("Call whoami: %q, %v", who, err)
		}
		var echo map[string]int
		if err := a.node.Call(ctx, "alice", "echo", map[string]int{"x": 1}, &echo); err != nil || echo["x"] != 1 {
			t.Fatalf("Call echo: %v, %v", echo, err)
		}
	})
	t.Run("local", func(t *testing.T) {
		var who string
		if err := b.node.Call(ctx, "alice", "whoami", nil, &who); err != nil || who != "alice" {
			t.Fatalf("Call on the holding node: %q, %v", who, err)
		}
	})
	t.Run("application error", func(t *testing.T) {
		err := a.node.Call(ctx, "alice", "fail", nil, nil)
		var e *jsonrpc.Error
		if !errors.As(err, &e) {
			t.Fatalf("Call fail: %v (%T), want a *jsonrpc.Error", err, err)
		}
		if e.Code != 4001 || e.Message != "not allowed" || string(e.Data) != `{"why":"because"}` {
			t.Errorf("error crossed as %d %q %s", e.Code, e.Message, e.Data)
		}
	})
	t.Run("method not found", func(t *testing.T) {
		err := a.node.Call(ctx, "alice", "nope", nil, nil)
		if !errors.Is(err, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}) {
			t.Fatalf("Call nope: %v", err)
		}
	})
	t.Run("unknown name", func(t *testing.T) {
		start := time.Now()
		err := a.node.Call(ctx, "bob", "whoami", nil, nil)
		if !errors.Is(err, cluster.ErrUnknownPeer) {
			t.Fatalf("Call bob: %v, want ErrUnknownPeer", err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("ErrUnknownPeer took %v", d)
		}
		if err := a.node.Notify(ctx, "bob", "hello", []string{"hi"}); !errors.Is(err, cluster.ErrUnknownPeer) {
			t.Fatalf("Notify bob: %v, want ErrUnknownPeer", err)
		}
	})
	t.Run("notify", func(t *testing.T) {
		if err := a.node.Notify(ctx, "alice", "hello", []string{"from a"}); err != nil {
			t.Fatal(err)
		}
		if got := recv(t, pg.notes); got != "from a" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() { errc <- a.node.Call(cctx, "alice", "block", nil, nil) }()
		recv(t, pg.started)
		cancel()
		if err := recv(t, errc); !errors.Is(err, context.Canceled) {
			t.Errorf("Call returned %v, want context.Canceled", err)
		}
		if err := recv(t, pg.cancelled); !errors.Is(err, context.Canceled) {
			t.Errorf("the page's handler saw %v", err)
		}
	})
	t.Run("departed", func(t *testing.T) {
		pg.peer.Close()
		var err error
		deadline := time.Now().Add(wait)
		for !errors.Is(err, cluster.ErrUnknownPeer) {
			if time.Now().After(deadline) {
				t.Fatalf("Call to a departed name: %v, want ErrUnknownPeer", err)
			}
			err = a.node.Call(testCtx(t, wait), "alice", "whoami", nil, nil)
		}
	})
}

// TestNotifyEveryHolder: a name held on two nodes gets a notification on
// both, whoever sends it; a Call reaches one of them.
func TestNotifyEveryHolder(t *testing.T) {
	ns := startNATS(t, -1)
	a := newSite(t, ns.ClientURL(), cluster.Options{}, registerByQuery)
	b := newSite(t, ns.ClientURL(), cluster.Options{}, registerByQuery)
	c := newSite(t, ns.ClientURL(), cluster.Options{}, registerByQuery)
	pa, pb := openPage(t, a, "carol"), openPage(t, b, "carol")
	flush(t, a, b)
	ctx := testCtx(t, wait)
	for _, from := range []*site{a, c} { // a holds the name; c does not
		if err := from.node.Notify(ctx, "carol", "hello", []string{from.node.ID()}); err != nil {
			t.Fatal(err)
		}
		for _, pg := range []*page{pa, pb} {
			if got := recv(t, pg.notes); got != from.node.ID() {
				t.Errorf("got %q, want %q", got, from.node.ID())
			}
		}
	}
	var who string
	if err := c.node.Call(ctx, "carol", "whoami", nil, &who); err != nil || who != "carol" {
		t.Fatalf("Call: %q, %v", who, err)
	}
}

// TestRegisterUnregister: a name given to two Peers on one node is called
// on the later one; unregister ends a registration at once, and twice is
// harmless; the last one gone, so is the name.
func TestRegisterUnregister(t *testing.T) {
	ns := startNATS(t, -1)
	a := newSite(t, ns.ClientURL(), cluster.Options{}, nil)
	b := newSite(t, ns.ClientURL(), cluster.Options{}, nil)
	first, second := openPage(t, b, "first"), openPage(t, b, "second")
	u1 := b.node.Register("x", first.srv)
	u2 := b.node.Register("x", second.srv)
	flush(t, b)
	ctx := testCtx(t, wait)
	who := func() string {
		t.Helper()
		var who string
		if err := a.node.Call(ctx, "x", "whoami", nil, &who); err != nil {
			t.Fatalf("Call: %v", err)
		}
		return who
	}
	if got := who(); got != "second" {
		t.Errorf("Call reached %q, want the later registration", got)
	}
	u2()
	u2()
	if got := who(); got != "first" {
		t.Errorf("after unregister, Call reached %q", got)
	}
	u1()
	flush(t, b)
	if err := a.node.Call(ctx, "x", "whoami", nil, nil); !errors.Is(err, cluster.ErrUnknownPeer) {
		t.Errorf("Call after both left: %v", err)
	}
	if err := b.node.Call(ctx, "x", "whoami", nil, nil); !errors.Is(err, cluster.ErrUnknownPeer) {
		t.Errorf("local Call after both left: %v", err)
	}
}

func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatal("timed out")
		var zero T
		return zero
	}
}
