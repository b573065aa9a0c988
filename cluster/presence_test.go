package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/topic"
)

// changes records what a PresenceStore's Watch reports.
type changes struct {
	mu sync.Mutex
	ev []string
}

func (c *changes) add(id string, present bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if present {
		c.ev = append(c.ev, "+"+id)
	} else {
		c.ev = append(c.ev, "-"+id)
	}
}

func (c *changes) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.ev, " ")
}

// TestPresenceAcrossNodes pins cluster.PresenceStore: an identity that
// joins a topic on node a is present for node b's watch and List; present
// once however many nodes have it, and gone when the last leaves; and the
// identities of a node that died without leaving (its connection gone, no
// Close) leave within the bucket's TTL, seen by the other node's watch.
// Names with '.', '*' and spaces work. Issue 31, point 10: presence across
// the cluster.
func TestPresenceAcrossNodes(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ncA, ncB := connect(t, ns.ClientURL()), connect(t, ns.ClientURL())
	a, err := cluster.NewPresenceStore(ncA, cluster.PresenceOptions{TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := cluster.NewPresenceStore(ncB, cluster.PresenceOptions{TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const room, alice, bob = "room.42 *", "alice@example.com", "bob b"

	var seen changes
	present, stop, err := b.Watch(ctx, room, seen.add)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if len(present) != 0 {
		t.Fatalf("present at first: %v", present)
	}
	if err := a.Join(ctx, room, alice); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "alice joined on a, seen by b", func() bool { return seen.String() == "+"+alice })
	if got, err := b.List(ctx, room); err != nil || !slices.Equal(got, []string{alice}) {
		t.Fatalf("b.List = %v, %v", got, err)
	}
	// alice on b too, then gone from a: still present; gone from b: left.
	for _, step := range []func() error{
		func() error { return b.Join(ctx, room, alice) },
		func() error { return a.Leave(ctx, room, alice) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // what a change would take to come
	if got := seen.String(); got != "+"+alice {
		t.Fatalf("alice on two nodes, then one: the watch saw %q, want no change", got)
	}
	if err := b.Leave(ctx, room, alice); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "alice left everywhere", func() bool { return seen.String() == fmt.Sprintf("+%s -%s", alice, alice) })

	// bob on a; a dies without leaving (no Close: its connection goes).
	if err := a.Join(ctx, room, bob); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob joined", func() bool { return strings.HasSuffix(seen.String(), "+"+bob) })
	died := time.Now()
	ncA.Close()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.HasSuffix(seen.String(), "-"+bob) {
		if time.Now().After(deadline) {
			t.Fatalf("bob still present 30 s after his node died (TTL 3 s): %q", seen.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the identities of a node that died left %v after it (TTL 3 s)", time.Since(died).Round(100*time.Millisecond))
	if got, err := b.List(ctx, room); err != nil || len(got) != 0 {
		t.Fatalf("b.List after a died = %v, %v", got, err)
	}
	a.Close() // stops its refresher; its deletes fail on the closed connection
}

type userKey struct{}

// TestPresenceStoreUnderHubs runs two topic.Hubs, one per node, each on
// its own NATS connection and cluster.PresenceStore: a page following the
// room on node b hears that alice, who follows it on node a, joined and
// then left, and both Hubs' Present list her while she is there.
func TestPresenceStoreUnderHubs(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	hub := func() *topic.Hub {
		ps, err := cluster.NewPresenceStore(connect(t, ns.ClientURL()), cluster.PresenceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h := &topic.Hub{
			Allow:          topic.AllowAll,
			Identity:       func(ctx context.Context) string { s, _ := ctx.Value(userKey{}).(string); return s },
			Presence:       func(string) bool { return true },
			PresenceStore:  ps,
			PresenceWindow: 20 * time.Millisecond,
		}
		t.Cleanup(func() { h.Close(); ps.Close() })
		return h
	}
	// join connects user to h over a Pipe and follows room with a
	// Follower whose presence events go to events.
	join := func(h *topic.Hub, user string, events chan<- topic.PresenceParams) *jsonrpc.Peer {
		smux, cmux := jsonrpc.NewMux(), jsonrpc.NewMux()
		h.Register(smux)
		f := &topic.Follower{OnPresence: func(p topic.PresenceParams) {
			if events != nil {
				events <- p
			}
		}}
		f.Register(cmux)
		a, b := jsonrpc.Pipe()
		server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux, BaseContext: context.WithValue(context.Background(), userKey{}, user)})
		client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: cmux})
		t.Cleanup(func() { client.Close(); server.Close(); client.Wait(); server.Wait() })
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := f.Subscribe(ctx, client, "room"); err != nil {
			t.Fatal(err)
		}
		return client
	}
	a, b := hub(), hub()
	events := make(chan topic.PresenceParams, 16)
	join(b, "bob", events)
	next := func(what string, ok func(topic.PresenceParams) bool) {
		t.Helper()
		deadline := time.After(wait)
		for {
			select {
			case p := <-events:
				if ok(p) {
					return
				}
			case <-deadline:
				t.Fatalf("bob never heard %s", what)
			}
		}
	}
	alice := join(a, "alice", nil)
	next("alice join on the other node", func(p topic.PresenceParams) bool { return slices.Contains(p.Joined, "alice") })
	for _, h := range []*topic.Hub{a, b} {
		ids, err := h.Present(context.Background(), "room")
		if err != nil || !slices.Equal(ids, []string{"alice", "bob"}) {
			t.Fatalf("Present = %v, %v; want [alice bob] on both nodes", ids, err)
		}
	}
	alice.Close()
	next("alice leave on the other node", func(p topic.PresenceParams) bool { return slices.Contains(p.Left, "alice") })
}
