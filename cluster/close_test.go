package cluster_test

import (
	"context"
	"errors"
	"testing"

	"github.com/peerwire/jsonrpc/cluster"
)

// TestClose: Close cancels the calls the node serves, ends no Peer, is
// safe twice, and the node refuses work afterwards.
func TestClose(t *testing.T) {
	ns := startNATS(t, -1)
	a := newSite(t, ns.ClientURL(), cluster.Options{}, registerByQuery)
	b := newSite(t, ns.ClientURL(), cluster.Options{}, registerByQuery)
	pg := openPage(t, b, "dana")
	b.node.Topic("room").Add(pg.srv)
	flush(t, b)
	ctx := testCtx(t, wait)
	errc := make(chan error, 1)
	go func() { errc <- a.node.Call(ctx, "dana", "block", nil, nil) }()
	recv(t, pg.started)

	if err := b.node.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.node.Close(); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, pg.cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("the served call's handler saw %v", err)
	}
	if err := recv(t, errc); !errors.Is(err, cluster.ErrUnknownPeer) {
		t.Errorf("a call whose serving node closed: %v, want ErrUnknownPeer", err)
	}
	select {
	case <-pg.srv.Done():
		t.Error("Close ended a Peer")
	default:
	}
	if err := b.node.Topic("room").Notify("tick", nil); !errors.Is(err, cluster.ErrClosed) {
		t.Errorf("Topic.Notify after Close: %v", err)
	}
	if err := b.node.Call(ctx, "dana", "whoami", nil, nil); !errors.Is(err, cluster.ErrClosed) {
		t.Errorf("Call after Close: %v", err)
	}
	if err := b.node.Notify(ctx, "dana", "hello", nil); !errors.Is(err, cluster.ErrClosed) {
		t.Errorf("Notify after Close: %v", err)
	}
	b.node.Register("x", pg.srv)() // a no-op, and its unregister too
	b.node.Topic("room").Add(pg.srv)
	if n := b.node.Topic("room").Len(); n != 0 {
		t.Errorf("Len after Close: %d", n)
	}
	if err := a.node.Call(ctx, "dana", "whoami", nil, nil); !errors.Is(err, cluster.ErrUnknownPeer) {
		t.Errorf("Call to a name of a closed node: %v", err)
	}
}

// TestNewOptions: bad options are refused, defaults filled in.
func TestNewOptions(t *testing.T) {
	ns := startNATS(t, -1)
	nc := connect(t, ns.ClientURL())
	for _, o := range []cluster.Options{{Prefix: "a..b"}, {Prefix: "a.*"}, {Prefix: "a b"}, {NodeID: "x\ny"}} {
		if n, err := cluster.New(nc, o); err == nil {
			n.Close()
			t.Errorf("New(%+v) did not fail", o)
		}
	}
	if _, err := cluster.New(nc, cluster.Options{}, cluster.Options{}); err == nil {
		t.Error("New with two Options did not fail")
	}
	n, err := cluster.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.ID() == "" || !n.Connected() {
		t.Errorf("ID %q, Connected %v", n.ID(), n.Connected())
	}
	first, again := n.Topic("a"), n.Topic("a")
	if first != again || first == n.Topic("b") {
		t.Error("Topic does not return the same *Topic for the same name")
	}
}

// TestPrefixesApart: nodes with different prefixes do not hear each other.
func TestPrefixesApart(t *testing.T) {
	ns := startNATS(t, -1)
	a := newSite(t, ns.ClientURL(), cluster.Options{Prefix: "app1"}, joinRoom)
	b := newSite(t, ns.ClientURL(), cluster.Options{Prefix: "app2.prod"}, joinRoom)
	c := newSite(t, ns.ClientURL(), cluster.Options{Prefix: "app2.prod"}, joinRoom)
	la, lb := listen(t, a), listen(t, b)
	flush(t, a, b, c)
	publish(t, c, "c", 0, 3)
	waitFor(t, "b's client to get c's ticks", func() bool { return lb.count() == 3 })
	publish(t, a, "a", 0, 1) // a's own: after c's, had they crossed
	waitFor(t, "a's client to get a's tick", func() bool { return la.count() >= 1 })
	if got := la.seqs("c"); len(got) != 0 {
		t.Errorf("a node of another prefix got %v", got)
	}
}
