package topic_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

type userKey struct{}

// room is an Allow for "room" that lets only its members in, by the user
// the connection's ctx carries, and everyone into "lobby".
type room struct {
	mu      sync.Mutex
	members map[string]bool
}

func (r *room) allow(ctx context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	user, _ := ctx.Value(userKey{}).(string)
	if name == "lobby" || r.members[user] {
		return nil
	}
	return topic.ErrNoSuchTopic
}

func (r *room) revoke(user string) {
	r.mu.Lock()
	delete(r.members, user)
	r.mu.Unlock()
}

// signedIn connects a client of user served by cmux to hub, and returns
// both ends.
func signedIn(t testing.TB, hub *topic.Hub, user string, cmux *jsonrpc.Mux) (client, server *jsonrpc.Peer) {
	smux := jsonrpc.NewMux()
	hub.Register(smux)
	a, b := jsonrpc.Pipe()
	base := context.WithValue(context.Background(), userKey{}, user)
	server = jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux, BaseContext: base})
	client = jsonrpc.NewPeer(b, jsonrpc.Options{Handler: cmux})
	t.Cleanup(func() { client.Close(); server.Close(); client.Wait(); server.Wait() })
	return client, server
}

// kickRecorder is a Follower whose OnError records what it is given.
type kickRecorder struct {
	*recorder
	f    *topic.Follower
	mux  *jsonrpc.Mux
	errs chan error
}

func newKickRecorder() *kickRecorder {
	k := &kickRecorder{recorder: newRecorder(), mux: jsonrpc.NewMux(), errs: make(chan error, 10)}
	k.f = k.recorder.follower()
	k.f.OnError = func(_ string, err error) { k.errs <- err }
	k.f.Register(k.mux)
	return k
}

func (k *kickRecorder) nextErr(t testing.TB) error {
	t.Helper()
	select {
	case err := <-k.errs:
		return err
	case <-time.After(wait):
		t.Fatal("OnError was not called")
		return nil
	}
}

// TestHubKick (issue 31.10): the server removes a subscriber from a topic
// without closing its connection: the client gets topic.kicked, the
// Follower reports it to OnError (ErrKicked, with the reason) and stops
// following the topic, on this connection and the next ones; its other
// topics go on; a later subscribe is refused once Allow refuses it.
func TestHubKick(t *testing.T) {
	r := &room{members: map[string]bool{"bob": true}}
	hub := &topic.Hub{Allow: r.allow}
	defer hub.Close()
	k := newKickRecorder()
	client, server := signedIn(t, hub, "bob", k.mux)
	for _, name := range []string{"room", "lobby"} {
		if err := k.f.Subscribe(testCtx(t), client, name); err != nil {
			t.Fatal(err)
		}
	}
	r.revoke("bob")
	if ok, err := hub.Kick(testCtx(t), server, "room", "removed from the room"); !ok || err != nil {
		t.Fatalf("Kick = %v, %v, want true, nil", ok, err)
	}
	err := k.nextErr(t)
	if !errors.Is(err, topic.ErrKicked) || !strings.Contains(err.Error(), "removed from the room") {
		t.Fatalf("OnError got %v, want ErrKicked with the reason", err)
	}
	if n := hub.Subscribers("room"); n != 0 {
		t.Fatalf("%d subscribers of room after the kick, want 0", n)
	}
	if _, ok := k.f.Position("room"); ok {
		t.Fatal("the Follower still follows room")
	}
	if ok, _ := hub.Kick(testCtx(t), server, "room", "again"); ok {
		t.Error("a second Kick found the subscriber")
	}
	publish(t, hub, "lobby", "still here")
	if ev := k.await(t, 3); ev[2] == "" { // resets of room and lobby, then lobby's message
		t.Fatal(ev)
	}
	if ended(client) {
		t.Fatal("the kick ended the connection")
	}
	client2, _ := signedIn(t, hub, "bob", k.mux)
	client.Close()
	if err := k.f.Resubscribe(testCtx(t), client2); err != nil {
		t.Fatal(err)
	}
	if n := hub.Subscribers("room"); n != 0 {
		t.Fatalf("Resubscribe after the kick subscribed room again (%d subscribers)", n)
	}
	err = k.f.Subscribe(testCtx(t), client2, "room")
	if e, ok := errors.AsType[*jsonrpc.Error](err); !ok || e.Code != topic.CodeNoSuchTopic {
		t.Fatalf("a new subscribe of room after the revoke = %v, want no such topic", err)
	}
}

// TestHubKickIdentity: a user revoked from a room is kicked on every
// connection of theirs (Hub.Identity), and nobody else is.
func TestHubKickIdentity(t *testing.T) {
	r := &room{members: map[string]bool{"bob": true, "alice": true}}
	hub := &topic.Hub{Allow: r.allow, Identity: func(ctx context.Context) string {
		user, _ := ctx.Value(userKey{}).(string)
		return user
	}}
	defer hub.Close()
	var bobs []*kickRecorder
	for _, user := range []string{"bob", "bob", "alice"} {
		k := newKickRecorder()
		client, _ := signedIn(t, hub, user, k.mux)
		if err := k.f.Subscribe(testCtx(t), client, "room"); err != nil {
			t.Fatal(err)
		}
		if user == "bob" {
			bobs = append(bobs, k)
		}
	}
	r.revoke("bob")
	n, err := hub.KickIdentity(testCtx(t), "bob", "room", "revoked")
	if n != 2 || err != nil {
		t.Fatalf("KickIdentity(bob) = %d, %v, want 2 connections", n, err)
	}
	for _, k := range bobs {
		if err := k.nextErr(t); !errors.Is(err, topic.ErrKicked) {
			t.Fatalf("bob's OnError got %v", err)
		}
	}
	if got := hub.Subscribers("room"); got != 1 {
		t.Fatalf("%d subscribers of room, want alice's alone", got)
	}
	if n, err := hub.KickIdentity(testCtx(t), "", "room", "x"); n != 0 || err == nil {
		t.Errorf("KickIdentity of the empty identity = %d, %v, want an error", n, err)
	}
	nohub := &topic.Hub{Allow: topic.AllowAll}
	defer nohub.Close()
	if _, err := nohub.KickIdentity(testCtx(t), "bob", "room", "x"); !errors.Is(err, topic.ErrNoIdentity) {
		t.Errorf("KickIdentity on a Hub without Identity = %v, want ErrNoIdentity", err)
	}
}

func ended(p *jsonrpc.Peer) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}
