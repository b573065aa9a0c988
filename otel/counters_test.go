package otel_test

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/otel"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// TestSlowConsumersMetric: an observed Peer that a Group drops because
// its remote side does not read (jsonrpc.ErrSlowConsumer) adds one to
// peerwire.jsonrpc.slow_consumers; one that ends otherwise adds nothing.
func TestSlowConsumersMetric(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{})
	// Its other end is never read: the Group's writes to it block.
	a, b := jsonrpc.Pipe()
	defer b.Close()
	slow := jsonrpc.NewPeer(a, jsonrpc.Options{OnConnect: tel.Observe})
	c, d := jsonrpc.Pipe()
	other := jsonrpc.NewPeer(c, jsonrpc.Options{OnConnect: tel.Observe})
	peer := jsonrpc.NewPeer(d)
	other.Close()
	other.Wait()
	peer.Close()
	peer.Wait()
	dropAsSlow(t, slow)
	r.waitState(t, "one slow consumer", func(s map[string]float64) bool {
		return s["peerwire.jsonrpc.slow_consumers"] == 1 && s["peerwire.jsonrpc.connections"] == 0
	})
	time.Sleep(50 * time.Millisecond) // the other Peer's end hook has had its chance to count wrongly
	if s := r.state(t); s["peerwire.jsonrpc.slow_consumers"] != 1 {
		t.Errorf("slow_consumers = %v, want 1", s["peerwire.jsonrpc.slow_consumers"])
	}
}

// TestTopicsMetric: the topics open in an observed topic.Hub.
func TestTopicsMetric(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{})
	hub := &topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	tel.ObserveTopics(hub)
	for _, name := range []string{"a", "b", "a"} {
		if _, err := hub.Publish(context.Background(), name, 1); err != nil {
			t.Fatal(err)
		}
	}
	r.waitState(t, "two topics", func(s map[string]float64) bool { return s["peerwire.jsonrpc.topics"] == 2 })
}

// TestWebSocketMetrics: an observed ws.Server's connections, one while a
// Client is connected and none once it has closed; and the Client's
// attempts to connect again (CountReconnects): one after the server drops
// its connection, which it then makes, and the OnState it wraps still told.
func TestWebSocketMetrics(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{})
	// The server's Peers, in the order OnConnect records them: the Client
	// may report Connected before the server's OnConnect has run, so the
	// test waits for them here (bounded), and OnConnect never blocks.
	served := make(chan *jsonrpc.Peer, 16)
	srv := &ws.Server{Peer: jsonrpc.Options{OnConnect: func(p *jsonrpc.Peer) {
		select {
		case served <- p:
		default:
		}
	}}}
	tel.ObserveWebSockets(srv)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())
	states := make(chan ws.State, 16)
	c := ws.NewClient("ws"+strings.TrimPrefix(hs.URL, "http"), ws.ClientOptions{
		HTTPClient: hs.Client(),
		MinBackoff: time.Millisecond,
		OnState:    tel.CountReconnects(func(s ws.State, _ error) { states <- s }),
	})
	defer c.Close()
	waitFor(t, states, ws.Connected)
	r.waitState(t, "one connection", func(s map[string]float64) bool {
		return s["peerwire.jsonrpc.websocket.connections"] == 1 && s["peerwire.jsonrpc.reconnect.attempts"] == 0
	})
	select {
	case p := <-served:
		p.Close() // the server drops the connection
	case <-time.After(10 * time.Second):
		t.Fatal("the server's OnConnect did not record its Peer within 10 s of the Client connecting")
	}
	waitFor(t, states, ws.Reconnecting)
	waitFor(t, states, ws.Connected)
	if n := c.Reconnects(); n != 1 {
		t.Errorf("the Client reconnected %d times, want 1", n)
	}
	r.waitState(t, "one attempt to connect again", func(s map[string]float64) bool {
		return s["peerwire.jsonrpc.reconnect.attempts"] == 1 && s["peerwire.jsonrpc.websocket.connections"] == 1
	})
	c.Close()
	r.waitState(t, "no connection", func(s map[string]float64) bool { return s["peerwire.jsonrpc.websocket.connections"] == 0 })
}

// TestReconnectAttemptsFailing: a Client that cannot connect counts each
// attempt after the first: MaxAttempts 3 makes two more, and its give-up
// adds none.
func TestReconnectAttemptsFailing(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	states := make(chan ws.State, 16)
	c := ws.NewClient("ws://"+addr+"/", ws.ClientOptions{
		MinBackoff:  time.Millisecond,
		MaxBackoff:  time.Millisecond,
		MaxAttempts: 3,
		OnState:     tel.CountReconnects(func(s ws.State, _ error) { states <- s }),
	})
	defer c.Close()
	waitFor(t, states, ws.Closed)
	if s := r.state(t); s["peerwire.jsonrpc.reconnect.attempts"] != 2 {
		t.Errorf("reconnect.attempts = %v after 3 failed attempts, want 2", s["peerwire.jsonrpc.reconnect.attempts"])
	}
}

// waitFor waits (bounded: 10 s) until states delivers want.
func waitFor(t *testing.T, states <-chan ws.State, want ws.State) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case s := <-states:
			if s == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %v state within 10 s", want)
		}
	}
}

// dropAsSlow makes a Group drop slow, a Peer whose remote side reads
// nothing, as a slow consumer, and waits for its end.
func dropAsSlow(t *testing.T, slow *jsonrpc.Peer) {
	t.Helper()
	g := &jsonrpc.Group{MaxQueue: 1}
	g.Add(slow)
	for i := 0; i < 100; i++ {
		if err := g.Notify("tick", []int{i}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-slow.Done():
		default:
			continue
		}
		break
	}
	if err := slow.Wait(); !errors.Is(err, jsonrpc.ErrSlowConsumer) {
		t.Fatalf("the Peer that does not read ended with %v, want ErrSlowConsumer", err)
	}
}
