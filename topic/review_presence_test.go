package topic_test

import (
	"slices"
	"testing"
	"time"

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
