package topic_test

import (
	"errors"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// TestFollowerNotRegistered (issue 31.8): a Follower whose topic.message
// handler is not on the Mux that serves the connection would lose every
// message (before, a Debug log line only); Subscribe and Resubscribe fail
// with ErrNotRegistered instead, saying what to do. Registered on the Mux
// that serves the connection, it subscribes and gets the messages.
func TestFollowerNotRegistered(t *testing.T) {
	hub := &topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	connect := func(t *testing.T, cmux *jsonrpc.Mux) *jsonrpc.Peer {
		smux := jsonrpc.NewMux()
		hub.Register(smux)
		a, b := jsonrpc.Pipe()
		server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux})
		client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: cmux})
		t.Cleanup(func() { client.Close(); server.Close(); client.Wait(); server.Wait() })
		return client
	}
	cases := []struct {
		name     string
		register func(f, other *topic.Follower) *jsonrpc.Mux // returns the client's Mux
	}{
		{"never registered", func(_, _ *topic.Follower) *jsonrpc.Mux { return jsonrpc.NewMux() }},
		{"registered on another Mux", func(f, _ *topic.Follower) *jsonrpc.Mux {
			f.Register(jsonrpc.NewMux())
			return jsonrpc.NewMux()
		}},
		{"another Follower on the connection's Mux", func(f, other *topic.Follower) *jsonrpc.Mux {
			f.Register(jsonrpc.NewMux())
			m := jsonrpc.NewMux()
			other.Register(m)
			return m
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &topic.Follower{}
			p := connect(t, c.register(f, &topic.Follower{}))
			err := f.Subscribe(testCtx(t), p, "board")
			if !errors.Is(err, topic.ErrNotRegistered) {
				t.Fatalf("Subscribe = %v, want ErrNotRegistered", err)
			}
			if _, ok := f.Position("board"); ok {
				t.Error("the topic is followed after a Subscribe that failed with ErrNotRegistered")
			}
			if err := f.Resubscribe(testCtx(t), p); !errors.Is(err, topic.ErrNotRegistered) {
				t.Fatalf("Resubscribe = %v, want ErrNotRegistered", err)
			}
			if hub.Subscribers("board") != 0 {
				t.Errorf("the hub has %d subscribers of board, want 0: nothing was subscribed", hub.Subscribers("board"))
			}
		})
	}
	t.Run("registered", func(t *testing.T) {
		rec := newRecorder()
		f := rec.follower()
		m := jsonrpc.NewMux()
		f.Register(m)
		p := connect(t, m)
		if err := f.Subscribe(testCtx(t), p, "ok"); err != nil {
			t.Fatal(err)
		}
		publish(t, hub, "ok", 1)
		rec.await(t, 2) // the reset of the first subscribe, and the message
	})
}
