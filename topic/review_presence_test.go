package topic_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// TestReviewClosedHubLeavesNoPresence: Hubs sharing a MemoryPresence (the
// documented way to share presence in a process) must not keep a closed
// Hub's users present for ever: closePresence tells the store nothing,
// on the ground that "the in-memory one goes with it", which a shared
// MemoryPresence does not.
func TestReviewClosedHubLeavesNoPresence(t *testing.T) {
	store := &topic.MemoryPresence{}
	a, b := presenceHub(store), presenceHub(store)
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
	a.Close() // the Hub alice was on closes (its server shut down, a test's Hub, a reload)
	closeAlice()
	ids, err := b.Present(testCtx(t), "room")
	if err != nil {
		t.Fatal(err)
	}
	listed, _ := store.List(testCtx(t), "room")
	if slices.Contains(ids, "alice") || slices.Contains(listed, "alice") {
		t.Errorf("after the Hub alice was on closed: Present = %v, store.List = %v; alice is present for ever", ids, listed)
	}
}

// TestReviewMembersAfterSubscribeListsSubscriber pins the promise of
// presenceJoined ("tells the store of a subscribe's new member before its
// reply, so that a topic.members after the reply lists it"): the first
// user of a room who asks who is there right after subscribing is told
// nobody is (count 0) until the window's topic.presence.
func TestReviewMembersAfterSubscribeListsSubscriber(t *testing.T) {
	hub := presenceHub(nil)
	hub.PresenceWindow = time.Minute // the window does not end during the test
	defer hub.Close()
	bob := newWatcher(t, hub, "bob")
	if err := bob.f.Subscribe(testCtx(t), bob.p, "room"); err != nil {
		t.Fatal(err)
	}
	r, err := bob.f.Members(testCtx(t), bob.p, "room")
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := hub.Present(testCtx(t), "room")
	if !slices.Contains(r.Members, "bob") {
		t.Errorf("topic.members right after bob's subscribe reply = %v count %d version %d (Hub.Present = %v), want bob listed", r.Members, r.Count, r.Version, ids)
	}
}

// presentSoon waits until hub.Present(name) is want.
func presentSoon(t testing.TB, hub *topic.Hub, name string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	deadline := time.Now().Add(wait)
	for {
		ids, err := hub.Present(testCtx(t), name)
		if err == nil && slices.Equal(ids, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Present(%s) = %v, %v; want %v", name, ids, err, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReviewPresenceAfterReconnect: a Follower's OnPresence is the Go
// client's view of who is present; after its connection drops and
// Resubscribe brings it back, nothing tells it what changed while it was
// away, and the topic.presence it then gets has a lower version than one
// it had seen (the protocol: "one of a lower or equal version is in it
// already"), so an application that follows the documented rule keeps
// a user who left present.
func TestReviewPresenceAfterReconnect(t *testing.T) {
	hub := presenceHub(nil)
	defer hub.Close()
	events := make(chan topic.PresenceParams, 100)
	f := &topic.Follower{OnPresence: func(e topic.PresenceParams) { events <- e }}
	mux := jsonrpc.NewMux()
	f.Register(mux)
	client1, _ := signedIn(t, hub, "bob", mux)
	if err := f.Subscribe(testCtx(t), client1, "room"); err != nil {
		t.Fatal(err)
	}
	view := map[string]bool{}
	var version uint64
	var versions []uint64
	apply := func(e topic.PresenceParams) {
		versions = append(versions, e.Version)
		if e.Version <= version {
			return // the documented rule: in the list already
		}
		version = e.Version
		for _, id := range e.Joined {
			view[id] = true
		}
		for _, id := range e.Left {
			delete(view, id)
		}
	}
	next := func() {
		select {
		case e := <-events:
			apply(e)
		case <-time.After(wait):
			t.Fatal("no topic.presence")
		}
	}
	next() // joined [bob]
	closeAlice := tab(t, hub, "alice", "room")
	next()          // joined [alice]
	client1.Close() // bob's connection drops
	presentSoon(t, hub, "room", "alice")
	closeAlice() // alice leaves while bob is away
	presentSoon(t, hub, "room")
	client2, _ := signedIn(t, hub, "bob", mux)
	if err := f.Resubscribe(testCtx(t), client2); err != nil {
		t.Fatal(err)
	}
	presentSoon(t, hub, "room", "bob")
	next()                             // what bob is told once back
	time.Sleep(300 * time.Millisecond) // 15 windows: anything else due has come
	for len(events) > 0 {
		apply(<-events)
	}
	ids := slices.Sorted(maps.Keys(view))
	if !slices.Equal(ids, []string{"bob"}) {
		t.Errorf("after a reconnection, bob's view built from OnPresence is %v (versions seen %v), while Present is [bob]", ids, versions)
	}
}
