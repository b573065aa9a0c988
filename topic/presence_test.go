package topic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// userOf is a Hub.Identity: the user signedIn put in the connection's ctx.
func userOf(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// presenceHub is a Hub with presence on every topic but "quiet", and a
// short window.
func presenceHub(store topic.PresenceStore) *topic.Hub {
	return &topic.Hub{Allow: allowAll, Identity: userOf, PresenceStore: store,
		Presence: func(name string) bool { return name != "quiet" }, PresenceWindow: 20 * time.Millisecond}
}

// watcher is a Follower of user that records the topic.presence it gets.
type watcher struct {
	f      *topic.Follower
	p      *jsonrpc.Peer
	events chan topic.PresenceParams
}

func newWatcher(t testing.TB, hub *topic.Hub, user string) *watcher {
	w := &watcher{events: make(chan topic.PresenceParams, 10000)}
	w.f = &topic.Follower{OnPresence: func(e topic.PresenceParams) { w.events <- e }}
	mux := jsonrpc.NewMux()
	w.f.Register(mux)
	w.p, _ = signedIn(t, hub, user, mux)
	return w
}

func (w *watcher) next(t testing.TB) topic.PresenceParams {
	t.Helper()
	select {
	case e := <-w.events:
		return e
	case <-time.After(wait):
		t.Fatal("no topic.presence")
		return topic.PresenceParams{}
	}
}

// tab is one more connection of user subscribed to name; close ends it.
func tab(t testing.TB, hub *topic.Hub, user, name string) (close func()) {
	t.Helper()
	smux := jsonrpc.NewMux()
	hub.Register(smux)
	a, b := jsonrpc.Pipe()
	base := context.WithValue(context.Background(), userKey{}, user)
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux, BaseContext: base})
	client := jsonrpc.NewPeer(b)
	if err := subscribeOn(testCtx(t), client, name); err != nil {
		t.Fatalf("subscribe %s to %s: %v", user, name, err)
	}
	return func() { client.Close(); server.Close(); client.Wait(); server.Wait() }
}

func changes(e topic.PresenceParams) string {
	return fmt.Sprintf("joined %v left %v count %d", e.Joined, e.Left, e.Count)
}

// TestPresenceJoinLeave (issue 31.10): presence is per identity: a user
// with two connections joins once and leaves when the last one goes; each
// subscriber of the topic gets topic.presence for both, the server reads
// Hub.Present and a subscriber Follower.Members.
func TestPresenceJoinLeave(t *testing.T) {
	hub := presenceHub(nil)
	defer hub.Close()
	bob := newWatcher(t, hub, "bob")
	if err := bob.f.Subscribe(testCtx(t), bob.p, "room"); err != nil {
		t.Fatal(err)
	}
	if got := changes(bob.next(t)); got != "joined [bob] left [] count 1" {
		t.Fatalf("bob's own join: %s", got)
	}
	closeA1 := tab(t, hub, "alice", "room")
	if got := changes(bob.next(t)); got != "joined [alice] left [] count 2" {
		t.Fatalf("alice's first tab: %s", got)
	}
	closeA2 := tab(t, hub, "alice", "room")
	if ids, err := hub.Present(testCtx(t), "room"); err != nil || !slices.Equal(ids, []string{"alice", "bob"}) {
		t.Fatalf("Present = %v, %v; want [alice bob]", ids, err)
	}
	m, err := bob.f.Members(testCtx(t), bob.p, "room")
	if err != nil || !slices.Equal(m.Members, []string{"alice", "bob"}) || m.Count != 2 || m.More || m.Version != 2 {
		t.Fatalf("Members = %+v, %v", m, err)
	}
	closeA1() // alice still has a tab: nothing to tell
	closeCarol := tab(t, hub, "carol", "room")
	if got := changes(bob.next(t)); got != "joined [carol] left [] count 3" {
		t.Fatalf("after alice's first tab went and carol came: %s, want carol's join alone", got)
	}
	closeA2()
	closeCarol()
	if got := changes(bob.next(t)); got != "joined [] left [alice carol] count 1" {
		t.Fatalf("after alice's last tab and carol went: %s", got)
	}
	if ids, _ := hub.Present(testCtx(t), "room"); !slices.Equal(ids, []string{"bob"}) {
		t.Fatalf("Present = %v, want [bob]", ids)
	}
}

// TestPresenceFlappingBounded (issue 31.10): a client that reconnects
// 1,000 times costs the topic's other subscribers at most one
// topic.presence per window (Hub.PresenceWindow), each listing it once;
// while another of its connections stays, none at all.
func TestPresenceFlappingBounded(t *testing.T) {
	hub := presenceHub(nil)
	hub.PresenceWindow = 50 * time.Millisecond
	defer hub.Close()
	bob := newWatcher(t, hub, "bob")
	if err := bob.f.Subscribe(testCtx(t), bob.p, "room"); err != nil {
		t.Fatal(err)
	}
	bob.next(t) // bob's own join

	stay := tab(t, hub, "alice", "room")
	if got := changes(bob.next(t)); got != "joined [alice] left [] count 2" {
		t.Fatalf("alice's first tab: %s", got)
	}
	for range 1000 {
		tab(t, hub, "alice", "room")()
	}
	stay()
	if got := changes(bob.next(t)); got != "joined [] left [alice] count 1" {
		t.Fatalf("1,000 reconnections beside a tab that stayed, then it went: %s, want alice's leave alone", got)
	}

	start := time.Now()
	for range 1000 {
		tab(t, hub, "alice", "room")()
	}
	elapsed := time.Since(start)
	closeCarol := tab(t, hub, "carol", "room") // the sentinel: after every flap
	defer closeCarol()
	n, alice := 0, 0
	for {
		e := bob.next(t)
		n++
		if len(e.Joined)+len(e.Left) > 2 {
			t.Fatalf("event %d lists %s", n, changes(e))
		}
		if slices.Contains(e.Joined, "alice") || slices.Contains(e.Left, "alice") {
			alice++
		}
		if slices.Contains(e.Joined, "carol") {
			break
		}
	}
	bound := int(elapsed/hub.PresenceWindow) + 2
	t.Logf("1,000 reconnections in %v: %d topic.presence to another subscriber (%d naming alice); bound %d (one per %v window)",
		elapsed.Round(time.Millisecond), n, alice, bound, hub.PresenceWindow)
	if n > bound {
		t.Fatalf("%d topic.presence for 1,000 reconnections in %v, over one per window (%d)", n, elapsed, bound)
	}
	if ids, _ := hub.Present(testCtx(t), "room"); !slices.Equal(ids, []string{"bob", "carol"}) {
		t.Fatalf("Present = %v, want [bob carol]", ids)
	}
}

// TestPresenceMembersBounded (issue 31.10): a topic with 10,000 identities
// present (on other Hubs sharing the store) answers topic.members with the
// first Hub.MaxPresence (100) and more: true, count 10,001, and tells a
// subscriber of the 10,000 joins in topic.presence of at most 100 names,
// saying more when it cut.
func TestPresenceMembersBounded(t *testing.T) {
	store := &topic.MemoryPresence{}
	hub := presenceHub(store)
	defer hub.Close()
	bob := newWatcher(t, hub, "bob")
	if err := bob.f.Subscribe(testCtx(t), bob.p, "room"); err != nil {
		t.Fatal(err)
	}
	bob.next(t)
	for i := range 10000 {
		if err := store.Join(testCtx(t), "room", fmt.Sprintf("user%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	events, more := 0, 0
	for e := bob.next(t); ; e = bob.next(t) {
		events++
		if len(e.Joined) > topic.DefaultMaxPresence || len(e.Left) != 0 {
			t.Fatalf("a topic.presence of %d joined, %d left", len(e.Joined), len(e.Left))
		}
		if e.More {
			more++
		}
		if e.Count == 10001 {
			break
		}
	}
	t.Logf("10,000 joins told in %d topic.presence of at most %d names (%d said more)", events, topic.DefaultMaxPresence, more)
	if more == 0 {
		t.Fatal("no topic.presence said more, though 10,000 names cannot fit")
	}
	m, err := bob.f.Members(testCtx(t), bob.p, "room")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(m)
	t.Logf("topic.members of 10,001 present: %d names, more %v, count %d, %d bytes", len(m.Members), m.More, m.Count, len(raw))
	if len(m.Members) != topic.DefaultMaxPresence || !m.More || m.Count != 10001 || m.Members[0] != "bob" {
		t.Fatalf("Members: %d names from %q, more %v, count %d", len(m.Members), m.Members[0], m.More, m.Count)
	}
	if ids, _ := hub.Present(testCtx(t), "room"); len(ids) != 10001 {
		t.Fatalf("Present (the server's, unbounded) = %d names, want 10,001", len(ids))
	}
}

// TestPresenceAcrossHubs (issue 31.10): Hubs that share a PresenceStore
// (the nodes of a cluster) share presence: a user joining on one is seen
// by a subscriber of the other, and its leaving too.
func TestPresenceAcrossHubs(t *testing.T) {
	store := &topic.MemoryPresence{}
	a, b := presenceHub(store), presenceHub(store)
	defer a.Close()
	defer b.Close()
	bob := newWatcher(t, b, "bob")
	if err := bob.f.Subscribe(testCtx(t), bob.p, "room"); err != nil {
		t.Fatal(err)
	}
	bob.next(t)
	closeAlice := tab(t, a, "alice", "room")
	if got := changes(bob.next(t)); got != "joined [alice] left [] count 2" {
		t.Fatalf("alice on the other Hub: %s", got)
	}
	closeAlice2 := tab(t, b, "alice", "room") // and on this one: still once
	closeAlice()
	closeAlice2()
	if got := changes(bob.next(t)); got != "joined [] left [alice] count 1" {
		t.Fatalf("alice gone from both: %s", got)
	}
	for _, h := range []*topic.Hub{a, b} {
		if ids, _ := h.Present(testCtx(t), "room"); !slices.Equal(ids, []string{"bob"}) {
			t.Fatalf("Present = %v, want [bob]", ids)
		}
	}
}

// TestPresenceOffByDefault (issue 31.10): a Hub without Presence tracks
// nobody: topic.members is refused, Present fails, and no topic.presence
// is sent; a topic Presence leaves out is the same.
func TestPresenceOffByDefault(t *testing.T) {
	for _, hub := range []*topic.Hub{{Allow: allowAll, Identity: userOf}, presenceHub(nil)} {
		name := "room"
		if hub.Presence != nil {
			name = "quiet"
		}
		bob := newWatcher(t, hub, "bob")
		msgs := make(chan topic.Message, 1)
		bob.f.OnMessage = func(m topic.Message) { msgs <- m }
		if err := bob.f.Subscribe(testCtx(t), bob.p, name); err != nil {
			t.Fatal(err)
		}
		defer tab(t, hub, "alice", name)()
		_, err := bob.f.Members(testCtx(t), bob.p, name)
		if rpcCode(err) != topic.CodeNoSuchTopic {
			t.Fatalf("topic.members on %q: %v, want %d", name, err, topic.CodeNoSuchTopic)
		}
		if _, err := hub.Present(testCtx(t), name); !errors.Is(err, topic.ErrNoPresence) {
			t.Fatalf("Present(%q) = %v, want ErrNoPresence", name, err)
		}
		time.Sleep(100 * time.Millisecond) // five windows
		publish(t, hub, name, "after")
		<-msgs
		if len(bob.events) != 0 {
			t.Fatalf("%d topic.presence on %q, want none", len(bob.events), name)
		}
		hub.Close()
	}
}

// TestPresenceNeedsIdentity (issue 31.10): a Hub with Presence and no
// Identity is a configuration error, not a silent no-op: Register panics,
// a subscribe to a topic with presence is refused, Present fails.
func TestPresenceNeedsIdentity(t *testing.T) {
	hub := &topic.Hub{Allow: allowAll}
	defer hub.Close()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Register did not panic on a Hub with Presence and no Identity")
			}
		}()
		(&topic.Hub{Presence: func(string) bool { return true }}).Register(jsonrpc.NewMux())
	}()
	client, done := lightPair(hub)
	defer done()
	hub.Presence = func(string) bool { return true } // after Register
	if err := subscribeOn(testCtx(t), client, "room"); rpcCode(err) != jsonrpc.CodeInternalError {
		t.Fatalf("subscribe = %v, want refused (%d)", err, jsonrpc.CodeInternalError)
	}
	if _, err := hub.Present(testCtx(t), "room"); !errors.Is(err, topic.ErrNoIdentity) {
		t.Fatalf("Present = %v, want ErrNoIdentity", err)
	}
}

// TestPresenceMembersOnlyForSubscribers (issue 31.10): topic.members
// answers only a connection that follows the topic: another gets
// CodeNoSuchTopic, as a subscribe Allow refused would.
func TestPresenceMembersOnlyForSubscribers(t *testing.T) {
	hub := presenceHub(nil)
	defer hub.Close()
	defer tab(t, hub, "alice", "room")()
	eve := newWatcher(t, hub, "eve")
	if _, err := eve.f.Members(testCtx(t), eve.p, "room"); rpcCode(err) != topic.CodeNoSuchTopic {
		t.Fatalf("topic.members without a subscription: %v, want %d", err, topic.CodeNoSuchTopic)
	}
}

// TestPresenceKickLeaves (issue 31.10): a user kicked from a topic on its
// last connection leaves it.
func TestPresenceKickLeaves(t *testing.T) {
	hub := presenceHub(nil)
	defer hub.Close()
	bob := newWatcher(t, hub, "bob")
	if err := bob.f.Subscribe(testCtx(t), bob.p, "room"); err != nil {
		t.Fatal(err)
	}
	bob.next(t)
	defer tab(t, hub, "alice", "room")()
	bob.next(t)
	if n, err := hub.KickIdentity(testCtx(t), "alice", "room", "revoked"); n != 1 || err != nil {
		t.Fatalf("KickIdentity = %d, %v", n, err)
	}
	if got := changes(bob.next(t)); got != "joined [] left [alice] count 1" {
		t.Fatalf("after the kick: %s", got)
	}
}
