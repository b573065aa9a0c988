package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/internal/testbin"
)

// tick is a numbered broadcast: the Seq-th of publisher From.
type tick struct {
	From string `json:"from"`
	Seq  int    `json:"seq"`
}

// listener is a WebSocket client that records the ticks it receives.
type listener struct {
	peer *jsonrpc.Peer // the client
	srv  *jsonrpc.Peer // its server-side Peer
	mu   sync.Mutex
	got  map[string][]int // seqs by publisher, in arrival order
	n    int
}

func listen(t testing.TB, s *site) *listener {
	t.Helper()
	l := &listener{got: make(map[string][]int)}
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "tick", func(_ context.Context, tk tick) (any, error) {
		l.mu.Lock()
		l.got[tk.From] = append(l.got[tk.From], tk.Seq)
		l.n++
		l.mu.Unlock()
		return nil, nil
	})
	l.peer, l.srv = dial(t, s, "", jsonrpc.Options{Handler: mux, Cancel: jsonrpc.LSPCancel})
	return l
}

func (l *listener) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *listener) seqs(from string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got[from])
}

// publish sends seqs [from, to) of publisher name to topic "room" on s.
func publish(t testing.TB, s *site, name string, from, to int) {
	t.Helper()
	for seq := from; seq < to; seq++ {
		if err := s.node.Topic("room").Notify("tick", tick{From: name, Seq: seq}); err != nil {
			t.Errorf("Topic.Notify: %v", err)
			return
		}
	}
}

func upTo(from, to int) []int {
	s := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// TestBroadcastEveryNode is the first "done when": three nodes,
// WebSocket clients on each, three publishers of 50 numbered broadcasts;
// every client gets every broadcast once, each publisher's in order.
func TestBroadcastEveryNode(t *testing.T) {
	ns := startNATS(t, -1)
	const nodes, perNode, msgs = 3, 4, 50
	var sites []*site
	var ls []*listener
	for range nodes {
		s := newSite(t, ns.ClientURL(), cluster.Options{}, joinRoom)
		sites = append(sites, s)
		for range perNode {
			ls = append(ls, listen(t, s))
		}
	}
	flush(t, sites...)

	var wg sync.WaitGroup
	for i, s := range sites {
		wg.Go(func() { publish(t, s, fmt.Sprint("node", i), 0, msgs) })
	}
	wg.Wait()
	for i, l := range ls {
		waitFor(t, fmt.Sprintf("client %d to get %d ticks", i, nodes*msgs), func() bool { return l.count() >= nodes*msgs })
	}
	time.Sleep(100 * time.Millisecond) // room for a duplicate to show
	for i, l := range ls {
		if n := l.count(); n != nodes*msgs {
			t.Errorf("client %d got %d ticks, want %d", i, n, nodes*msgs)
		}
		for j := range nodes {
			from := fmt.Sprint("node", j)
			if got := l.seqs(from); !slices.Equal(got, upTo(0, msgs)) {
				t.Errorf("client %d got from %s: %v, want 0..%d in order", i, from, got, msgs-1)
			}
		}
	}
}

// TestKillNode: a node that goes (Node, WebSocket server and NATS
// connection) takes only its own clients; the others keep receiving.
func TestKillNode(t *testing.T) {
	ns := startNATS(t, -1)
	var sites []*site
	var ls [][]*listener
	for range 3 {
		s := newSite(t, ns.ClientURL(), cluster.Options{}, joinRoom)
		sites = append(sites, s)
		ls = append(ls, []*listener{listen(t, s), listen(t, s)})
	}
	flush(t, sites...)
	publish(t, sites[0], "a", 0, 10)
	for _, l := range slices.Concat(ls...) {
		waitFor(t, "the first ticks", func() bool { return l.count() == 10 })
	}

	sites[2].kill()
	for _, l := range ls[2] {
		select {
		case <-l.peer.Done():
		case <-time.After(wait):
			t.Fatal("a client of the killed node is still connected")
		}
	}
	publish(t, sites[0], "a", 10, 20)
	publish(t, sites[1], "b", 0, 10)
	for _, l := range slices.Concat(ls[0], ls[1]) {
		waitFor(t, "the ticks after the kill", func() bool { return l.count() == 30 })
		if got := l.seqs("a"); !slices.Equal(got, upTo(0, 20)) {
			t.Errorf("from a: %v", got)
		}
		if got := l.seqs("b"); !slices.Equal(got, upTo(0, 10)) {
			t.Errorf("from b: %v", got)
		}
	}
	if err := sites[2].node.Topic("room").Notify("tick", tick{}); !errors.Is(err, cluster.ErrClosed) {
		t.Errorf("Notify on a closed node: %v, want ErrClosed", err)
	}
}

// TestRestartNATS: the NATS server goes away and comes back on the same
// port. While it is down each node's own clients still get that node's
// broadcasts, which the other nodes' clients never get (the connections
// are made without a reconnect buffer, so that Notify says so at once);
// once the nodes have reconnected, broadcasts cross again.
func TestRestartNATS(t *testing.T) {
	ns := startNATS(t, -1)
	port := natsPort(ns)
	var logs testbin.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := newSite(t, ns.ClientURL(), cluster.Options{Logger: logger, NodeID: "a"}, joinRoom, nats.ReconnectBufSize(-1))
	b := newSite(t, ns.ClientURL(), cluster.Options{}, joinRoom, nats.ReconnectBufSize(-1))
	la, lb := listen(t, a), listen(t, b)
	flush(t, a, b)
	publish(t, a, "a", 0, 5)
	waitFor(t, "ticks before the restart", func() bool { return la.count() == 5 && lb.count() == 5 })

	stopNATS(ns)
	waitFor(t, "the nodes to see NATS go", func() bool { return !a.node.Connected() && !b.node.Connected() })
	for seq := 5; seq < 10; seq++ {
		err := a.node.Topic("room").Notify("tick", tick{From: "a", Seq: seq})
		if !errors.Is(err, nats.ErrReconnectBufExceeded) {
			t.Fatalf("Notify while NATS is down: %v, want nats.ErrReconnectBufExceeded", err)
		}
	}
	waitFor(t, "a's own client to get a's ticks", func() bool { return la.count() == 10 })

	startNATS(t, port) // stopped at the test's end by its cleanup
	waitFor(t, "the nodes to reconnect", func() bool { return a.node.Connected() && b.node.Connected() })
	flush(t, a, b)
	publish(t, a, "a", 10, 15)
	publish(t, b, "b", 0, 5)
	waitFor(t, "ticks after the restart", func() bool { return la.count() >= 20 && lb.count() >= 15 })
	if got := la.seqs("a"); !slices.Equal(got, upTo(0, 15)) {
		t.Errorf("a's client got from a: %v", got)
	}
	if got := lb.seqs("a"); !slices.Equal(got, slices.Concat(upTo(0, 5), upTo(10, 15))) {
		t.Errorf("b's client got from a: %v, want 0..4 and 10..14: nothing sent while NATS was down", got)
	}
	for _, want := range []string{"level=INFO msg=\"cluster: NATS connection lost", "level=INFO msg=\"cluster: NATS connection back"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

// TestSubscriptionsFollowMembers: a node subscribes to a topic only while
// it has a member there. 1,000 topics with a member on node A each cost B
// no subscription, and A none once the members have gone.
func TestSubscriptionsFollowMembers(t *testing.T) {
	ns := startNATS(t, -1)
	a := newSite(t, ns.ClientURL(), cluster.Options{}, nil)
	b := newSite(t, ns.ClientURL(), cluster.Options{}, nil)
	baseA, baseB := a.nc.NumSubscriptions(), b.nc.NumSubscriptions()

	const topics = 1000
	var clients []*jsonrpc.Peer
	for i := range topics {
		c1, c2 := jsonrpc.Pipe()
		member := jsonrpc.NewPeer(c1)
		client := jsonrpc.NewPeer(c2)
		t.Cleanup(func() { client.Close(); member.Close() })
		clients = append(clients, client)
		name := fmt.Sprint("topic.", i) // a dot: names are encoded
		a.node.Topic(name).Add(member)
		b.node.Topic(name) // known on B, with no member there
	}
	if got := a.nc.NumSubscriptions() - baseA; got != topics {
		t.Errorf("node A holds %d topic subscriptions, want %d", got, topics)
	}
	if got := b.nc.NumSubscriptions() - baseB; got != 0 {
		t.Errorf("node B holds %d topic subscriptions, want 0", got)
	}
	for _, c := range clients {
		c.Close()
	}
	waitFor(t, "A to drop its subscriptions", func() bool { return a.nc.NumSubscriptions() == baseA })
	if n := a.node.Topic("topic.7").Len(); n != 0 {
		t.Errorf("Len after the members left: %d", n)
	}
}

// TestTopicRemove: a member removed gets nothing more, and a topic whose
// last member left resubscribes on the next Add.
func TestTopicRemove(t *testing.T) {
	ns := startNATS(t, -1)
	a := newSite(t, ns.ClientURL(), cluster.Options{}, joinRoom)
	b := newSite(t, ns.ClientURL(), cluster.Options{}, joinRoom)
	la := listen(t, a)
	room := a.node.Topic("room")
	flush(t, a, b)
	publish(t, b, "b", 0, 3)
	waitFor(t, "the first ticks", func() bool { return la.count() == 3 })

	member := la.srv
	room.Remove(member)
	if n := room.Len(); n != 0 {
		t.Fatalf("Len after Remove: %d", n)
	}
	flush(t, a) // the unsubscription has reached NATS
	publish(t, b, "b", 3, 6)
	flush(t, b) // NATS has routed them (to nobody)
	room.Add(member)
	flush(t, a)
	publish(t, b, "b", 6, 9)
	waitFor(t, "the ticks after the new Add", func() bool { return la.count() >= 6 })
	if got := la.seqs("b"); !slices.Equal(got, slices.Concat(upTo(0, 3), upTo(6, 9))) {
		t.Errorf("got %v, want 0..2 and 6..8", got)
	}
}

// TestTooLarge: a broadcast over the server's max_payload fails before it
// reaches anyone, with an error that says why.
func TestTooLarge(t *testing.T) {
	ns := startNATS(t, -1)
	a := newSite(t, ns.ClientURL(), cluster.Options{}, joinRoom)
	la := listen(t, a)
	big := map[string]string{"blob": strings.Repeat("x", 2<<20)}
	err := a.node.Topic("room").Notify("tick", big)
	if !errors.Is(err, cluster.ErrTooLarge) || !errors.Is(err, nats.ErrMaxPayload) {
		t.Fatalf("Notify of 2 MiB: %v, want ErrTooLarge", err)
	}
	err = a.node.Call(testCtx(t, wait), "nobody", "m", big, nil)
	if !errors.Is(err, cluster.ErrTooLarge) {
		t.Fatalf("Call of 2 MiB: %v, want ErrTooLarge", err)
	}
	publish(t, a, "a", 0, 1)
	waitFor(t, "a tick", func() bool { return la.count() == 1 })
	if got := la.seqs(""); len(got) != 0 {
		t.Errorf("the large broadcast arrived")
	}
}
