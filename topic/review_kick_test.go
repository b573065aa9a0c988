package topic_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// gatedRoom is a room whose Allow, once armed, decides (with the room's
// members as they are then) and then waits for release before it
// returns: a subscribe that passed Allow before a revoke, still in
// progress on the server.
type gatedRoom struct {
	room
	once    sync.Once
	armed   chan struct{} // closed: the next Allow of "room" waits
	entered chan struct{} // closed once it decided and waits
	release chan struct{}
}

func newGatedRoom(members ...string) *gatedRoom {
	g := &gatedRoom{room: room{members: map[string]bool{}}, armed: make(chan struct{}),
		entered: make(chan struct{}), release: make(chan struct{})}
	for _, m := range members {
		g.members[m] = true
	}
	return g
}

func (g *gatedRoom) allow(ctx context.Context, name string) error {
	err := g.room.allow(ctx, name)
	select {
	case <-g.armed:
	default:
		return err
	}
	if name != "room" {
		return err
	}
	waited := false
	g.once.Do(func() {
		waited = true
		close(g.entered)
	})
	if waited {
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	}
	return err
}

// TestReviewKickRemovesSubscribeInProgress pins Kick's promise "a
// subscribe of topic in progress on p when Kick runs is removed too",
// with the order the docs ask for (revoke in Allow, then kick): a
// subscribe of the same topic that had passed Allow before the revoke
// and is still in progress when Kick runs must not leave the connection
// subscribed once it ends.
func TestReviewKickRemovesSubscribeInProgress(t *testing.T) {
	g := newGatedRoom("bob")
	hub := &topic.Hub{Allow: g.allow}
	defer hub.Close()
	got := make(chan topic.Message, 16)
	cmux := jsonrpc.NewMux()
	cmux.Handle(topic.MethodMessage, jsonrpc.Typed(func(_ context.Context, m topic.Message) (any, error) {
		got <- m
		return nil, nil
	}))
	cmux.Handle(topic.MethodKicked, jsonrpc.Typed(func(context.Context, topic.KickedParams) (any, error) { return nil, nil }))
	client, server := signedIn(t, hub, "bob", cmux)
	if err := subscribeOn(testCtx(t), client, "room"); err != nil {
		t.Fatal(err)
	}
	close(g.armed)
	second := make(chan error, 1)
	go func() { second <- subscribeOn(testCtx(t), client, "room") }() // a Follower's resubscribe, say
	<-g.entered
	g.revoke("bob")
	if ok, err := hub.Kick(testCtx(t), server, "room", "revoked"); !ok || err != nil {
		t.Fatalf("Kick = %v, %v", ok, err)
	}
	close(g.release)
	if err := <-second; err != nil {
		t.Logf("the subscribe in progress ended with %v", err)
	}
	publish(t, hub, "room", "after the kick")
	if n := hub.Subscribers("room"); n != 0 {
		select {
		case m := <-got:
			t.Errorf("after revoke and Kick, %d subscriber(s) of room remain (the revoked client's subscribe in progress), want 0; it got message seq %d published after the kick", n, m.Seq)
		case <-testCtx(t).Done():
			t.Errorf("after revoke and Kick, %d subscriber(s) of room remain, want 0", n)
		}
	}
}

// TestReviewFollowerKickedDuringResubscribeLeavesNothing: a Follower
// kicked while a resubscribe of the topic is in flight stops following
// it (as documented), yet the server keeps the connection subscribed and
// the user present: messages keep coming to a topic nobody follows, and
// every other member sees the kicked user as present.
func TestReviewFollowerKickedDuringResubscribeLeavesNothing(t *testing.T) {
	g := newGatedRoom("bob")
	hub := &topic.Hub{Allow: g.allow, Identity: userOf, Presence: func(string) bool { return true }}
	defer hub.Close()
	k := newKickRecorder()
	client, _ := signedIn(t, hub, "bob", k.mux)
	if err := k.f.Subscribe(testCtx(t), client, "room"); err != nil {
		t.Fatal(err)
	}
	close(g.armed)
	done := make(chan error, 1)
	go func() { done <- k.f.Resubscribe(testCtx(t), client) }()
	<-g.entered
	g.revoke("bob")
	if ok, err := hub.KickIdentity(testCtx(t), "bob", "room", "revoked"); ok != 1 || err != nil {
		t.Fatalf("KickIdentity = %v, %v", ok, err)
	}
	k.nextErr(t) // the Follower has taken the kick: it follows room no more
	close(g.release)
	if err := <-done; err != nil {
		t.Logf("Resubscribe: %v", err)
	}
	if _, ok := k.f.Position("room"); ok {
		t.Fatal("the Follower still follows room after the kick")
	}
	present, err := hub.Present(testCtx(t), "room")
	if err != nil {
		t.Fatal(err)
	}
	if n := hub.Subscribers("room"); n != 0 || slices.Contains(present, "bob") {
		t.Errorf("after the kick the Follower follows nothing, yet the server holds %d subscriber(s) of room and Present = %v (want 0 and no bob)", n, present)
	}
}

// TestReviewKickIdentityDuringReconnection: the documented way to remove
// a user from a private room is to revoke them in Allow, then
// KickIdentity. A user whose page is reconnecting at that moment (its
// Resubscribe passed Allow just before the revoke) is not kicked at all
// (KickIdentity counts 0), and goes on receiving the room.
func TestReviewKickIdentityDuringReconnection(t *testing.T) {
	g := newGatedRoom("bob")
	hub := &topic.Hub{Allow: g.allow, Identity: userOf}
	defer hub.Close()
	k := newKickRecorder()
	client1, _ := signedIn(t, hub, "bob", k.mux)
	if err := k.f.Subscribe(testCtx(t), client1, "room"); err != nil {
		t.Fatal(err)
	}
	k.await(t, 1)   // the reset
	client1.Close() // the page's connection drops; it reconnects
	for deadline := time.Now().Add(wait); hub.Subscribers("room") != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the dropped connection still follows room")
		}
	}
	close(g.armed)
	client2, _ := signedIn(t, hub, "bob", k.mux)
	done := make(chan error, 1)
	go func() { done <- k.f.Resubscribe(testCtx(t), client2) }()
	<-g.entered
	g.revoke("bob")
	n, err := hub.KickIdentity(testCtx(t), "bob", "room", "revoked")
	if err != nil {
		t.Fatal(err)
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Logf("Resubscribe: %v", err)
	}
	publish(t, hub, "room", "private, after the revoke and the kick")
	select {
	case err := <-k.errs:
		t.Logf("OnError: %v", err)
	default:
	}
	if subs := hub.Subscribers("room"); subs != 0 {
		ev := k.await(t, 2)
		t.Errorf("revoke then KickIdentity during bob's reconnection: KickIdentity = %d, then %d subscriber(s) of room; bob's Follower got %q after both", n, subs, ev[1:])
	}
}

// TestReviewKickIdentityAfterSignInOverRPC: ws.ClientOptions.OnConnect
// invites signing in over RPC on the connection ("authenticate,
// re-subscribe"); Hub.Identity reads who signed in from the ctx (here,
// a table of the Peers that called "login"). Identity is read once, at
// the connection's first subscribe: a client that subscribes to a public
// topic before it signs in is "" for ever, so after a revoke
// KickIdentity never finds it, and presence never lists it.
func TestReviewKickIdentityAfterSignInOverRPC(t *testing.T) {
	var mu sync.Mutex
	users := map[*jsonrpc.Peer]string{}
	identity := func(ctx context.Context) string {
		mu.Lock()
		defer mu.Unlock()
		return users[jsonrpc.PeerFromContext(ctx)]
	}
	members := map[string]bool{"bob": true}
	allow := func(ctx context.Context, name string) error {
		mu.Lock()
		defer mu.Unlock()
		if name == "lobby" || members[users[jsonrpc.PeerFromContext(ctx)]] {
			return nil
		}
		return topic.ErrNoSuchTopic
	}
	hub := &topic.Hub{Allow: allow, Identity: identity, Presence: func(name string) bool { return name == "room" }}
	defer hub.Close()
	smux := jsonrpc.NewMux()
	hub.Register(smux)
	smux.HandleFunc("login", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		mu.Lock()
		users[jsonrpc.PeerFromContext(ctx)] = "bob" // the token checked, say
		mu.Unlock()
		return true, nil
	})
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux})
	client := jsonrpc.NewPeer(b)
	defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
	if err := subscribeOn(testCtx(t), client, "lobby"); err != nil { // before signing in
		t.Fatal(err)
	}
	if err := client.Call(testCtx(t), "login", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := subscribeOn(testCtx(t), client, "room"); err != nil {
		t.Fatal(err)
	}
	present, _ := hub.Present(testCtx(t), "room")
	mu.Lock()
	delete(members, "bob") // revoke, then kick: the documented order
	mu.Unlock()
	n, err := hub.KickIdentity(testCtx(t), "bob", "room", "revoked")
	if err != nil {
		t.Fatal(err)
	}
	if subs := hub.Subscribers("room"); n != 1 || subs != 0 {
		t.Errorf("bob signed in over RPC after subscribing to lobby: Present(room) = %v; after revoke, KickIdentity(bob) = %d and room keeps %d subscriber(s)", present, n, subs)
	}
}
