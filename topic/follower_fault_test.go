package topic_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// followerSite is a Hub's Mux and a Follower's Mux, connected by connect
// over a Pipe as often as the test likes.
type followerSite struct {
	hub        *topic.Hub
	smux, cmux *jsonrpc.Mux
}

func newFollowerSite(hub *topic.Hub, f *topic.Follower) *followerSite {
	s := &followerSite{hub: hub, smux: jsonrpc.NewMux(), cmux: jsonrpc.NewMux()}
	hub.Register(s.smux)
	f.Register(s.cmux)
	return s
}

// connect returns the client side of a new connection, ended with the test.
func (s *followerSite) connect(t testing.TB) *jsonrpc.Peer {
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: s.smux})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: s.cmux})
	t.Cleanup(func() { client.Close(); server.Close(); client.Wait(); server.Wait() })
	return client
}

// TestFollowerForgetsRefusedTopic (issue 30, finding 11): a topic the
// server refuses is not kept by the Follower: Subscribe returns the
// refusal, and Resubscribe, a ws.Client's OnConnect, succeeds on the next
// connections with the topics that are allowed, instead of failing on
// every one.
func TestFollowerForgetsRefusedTopic(t *testing.T) {
	hub := &topic.Hub{Allow: func(_ context.Context, name string) error {
		if name == "secret" {
			return errors.New("not for you")
		}
		return nil
	}}
	defer hub.Close()
	rec := newRecorder()
	f := rec.follower()
	s := newFollowerSite(hub, f)
	p := s.connect(t)
	if err := f.Subscribe(testCtx(t), p, "secret"); rpcCode(err) != topic.CodeNoSuchTopic {
		t.Fatalf("Subscribe to a refused topic: %v, want CodeNoSuchTopic", err)
	}
	if err := f.Subscribe(testCtx(t), p, "open"); err != nil {
		t.Fatal(err)
	}
	p.Close()
	for i := range 3 { // the connection drops and comes back
		p = s.connect(t)
		if err := f.Resubscribe(testCtx(t), p); err != nil {
			t.Fatalf("Resubscribe on connection %d after a refusal: %v", i+2, err)
		}
		if i < 2 {
			p.Close()
		}
	}
	publish(t, hub, "open", 1)
	if got := rec.await(t, 2)[1]; !strings.HasSuffix(got, ":1") {
		t.Fatalf("after the reconnections: %s", got)
	}
	if _, ok := f.Position("secret"); ok {
		t.Fatal("the refused topic has a position")
	}
}

// TestFollowerOnErrorReportsRefusal: a topic refused on a later subscribe
// (a revoked permission, at Resubscribe) goes to OnError and is no longer
// followed; the others are subscribed again, and Resubscribe succeeds.
func TestFollowerOnErrorReportsRefusal(t *testing.T) {
	var revoked atomic.Bool
	hub := &topic.Hub{Allow: func(_ context.Context, name string) error {
		if name == "room" && revoked.Load() {
			return jsonrpc.NewError(-32050, "no longer a member", nil)
		}
		return nil
	}}
	defer hub.Close()
	rec := newRecorder()
	f := rec.follower()
	var refused []string
	f.OnError = func(name string, err error) { refused = append(refused, fmt.Sprintf("%s %d", name, rpcCode(err))) }
	s := newFollowerSite(hub, f)
	p := s.connect(t)
	for _, name := range []string{"room", "lobby"} {
		if err := f.Subscribe(testCtx(t), p, name); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	revoked.Store(true)
	if err := f.Resubscribe(testCtx(t), s.connect(t)); err != nil {
		t.Fatalf("Resubscribe with one topic revoked: %v", err)
	}
	if fmt.Sprint(refused) != "[room -32050]" {
		t.Fatalf("OnError got %v, want the room's refusal", refused)
	}
	if _, ok := f.Position("room"); ok {
		t.Fatal("the refused topic is still followed")
	}
	if _, ok := f.Position("lobby"); !ok {
		t.Fatal("the allowed topic is no longer followed")
	}
}

// TestFollowerSubscribeOnEndedPeerKeepsTopic (issue 30, finding 12): a
// Subscribe on a Peer that has already ended fails, and the topic stays on
// the live connection it was on: the 5 messages published after arrive.
func TestFollowerSubscribeOnEndedPeerKeepsTopic(t *testing.T) {
	hub := &topic.Hub{Allow: allowAll}
	defer hub.Close()
	rec := newRecorder()
	f := rec.follower()
	s := newFollowerSite(hub, f)
	dead := s.connect(t)
	dead.Close()
	dead.Wait()
	live := s.connect(t)
	if err := f.Subscribe(testCtx(t), live, "t"); err != nil {
		t.Fatal(err)
	}
	first := rec.await(t, 1)[0]
	if err := f.Subscribe(testCtx(t), dead, "t"); !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("Subscribe on an ended Peer: %v, want ErrClosed", err)
	}
	for i := 1; i <= 5; i++ {
		publish(t, hub, "t", i)
	}
	epoch := strings.TrimSuffix(strings.TrimPrefix(first, "reset "), ":0")
	if got, w := strings.Join(rec.await(t, 6), " "), strings.Join(want(epoch, 0, 1, 5), " "); got != w {
		t.Fatalf("the application saw %s, want %s", got, w)
	}
}
