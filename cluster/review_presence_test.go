package cluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc/cluster"
)

// TestReviewFailedJoinIsNotCounted: a Join that fails (here: its ctx
// already ended) must not count, since its caller (topic.Hub) never Leaves
// what it failed to Join and tries the Join again. Today the count is
// taken before the Put, so after a failed Join, a good Join and the one
// Leave, the identity stays present (refreshed every TTL/3) for as long as
// the node lives.
func TestReviewFailedJoinIsNotCounted(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	nc := connect(t, ns.ClientURL())
	s, err := cluster.NewPresenceStore(nc, cluster.PresenceOptions{TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dead, kill := context.WithCancel(ctx)
	kill()
	if err := s.Join(dead, "room", "alice"); err == nil {
		t.Fatal("Join with an ended ctx succeeded")
	}
	if err := s.Join(ctx, "room", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.Leave(ctx, "room", "alice"); err != nil {
		t.Fatal(err)
	}
	// Wait past the TTL: the refresh would keep a leaked entry alive.
	time.Sleep(4 * time.Second)
	got, err := s.List(ctx, "room")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("after failed Join, Join, Leave and 4 s (TTL 3 s): List = %v, want none", got)
	}
}

// TestReviewOddNames: the doc says any string works for topic and
// identity; the empty string is a string.
func TestReviewOddNames(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	nc := connect(t, ns.ClientURL())
	s, err := cluster.NewPresenceStore(nc, cluster.PresenceOptions{TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, c := range [][2]string{{"room", ""}, {"", "alice"}} {
		if err := s.Join(ctx, c[0], c[1]); err != nil {
			t.Errorf("Join(%q, %q): %v", c[0], c[1], err)
			continue
		}
		got, err := s.List(ctx, c[0])
		if err != nil || !slices.Equal(got, []string{c[1]}) {
			t.Errorf("List(%q) = %q, %v; want [%q]", c[0], got, err, c[1])
		}
		if err := s.Leave(ctx, c[0], c[1]); err != nil {
			t.Errorf("Leave(%q, %q): %v", c[0], c[1], err)
		}
	}
}
