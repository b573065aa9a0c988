package jsonrpc

import (
	"context"
	"strings"
	"testing"
	"time"
)

// waitStats polls p.Stats (bounded: 10 s) until ok holds.
func waitStats(t *testing.T, p *Peer, what string, ok func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := p.Stats()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s; stats %+v", what, s)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestStatsHandlersAndPending: a call its handler holds shows as the
// caller's Pending and the server's Active with its bytes queued; a handler
// that calls back shows as Parked; all go back to zero when done.
func TestStatsHandlersAndPending(t *testing.T) {
	release := make(chan struct{})
	serverMux, clientMux := NewMux(), NewMux()
	serverMux.HandleFunc("hold", func(ctx context.Context, _ *Request) (any, error) {
		<-release
		return nil, nil
	})
	serverMux.HandleFunc("callback", func(ctx context.Context, _ *Request) (any, error) {
		return nil, PeerFromContext(ctx).Call(ctx, "back", nil, nil)
	})
	clientMux.HandleFunc("back", func(ctx context.Context, _ *Request) (any, error) {
		<-release
		return nil, nil
	})
	a, b := Pipe()
	client := NewPeer(a, Options{Handler: clientMux})
	server := NewPeer(b, Options{Handler: serverMux})
	released := false
	defer func() {
		if !released { // a failure: let the held handlers go, or Wait waits for them
			close(release)
		}
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	}()
	if s := server.Stats(); s.MaxQueuedBytes != 4<<20 || s.MaxOutboundBytes != 4<<20 {
		t.Errorf("budgets %+v, want the defaults %d, %d", s, 4<<20, 4<<20)
	}
	errc := make(chan error, 2)
	go func() { errc <- client.Call(context.Background(), "hold", nil, nil) }()
	go func() { errc <- client.Call(context.Background(), "callback", nil, nil) }()
	waitStats(t, client, "two calls pending", func(s Stats) bool { return s.Pending == 2 })
	waitStats(t, server, "two active, one parked, bytes queued", func(s Stats) bool {
		return s.Active == 2 && s.Parked == 1 && s.QueuedBytes > 0
	})
	close(release)
	released = true
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	waitStats(t, server, "all done", func(s Stats) bool { return s.Active == 0 && s.Parked == 0 && s.QueuedBytes == 0 })
	if s := client.Stats(); s.Pending != 0 {
		t.Errorf("client %+v, want nothing pending", s)
	}
}

// TestStatsPushBack: notifications over MaxQueuedBytes whose handler is
// held make the read loop push back, and PushBack grows.
func TestStatsPushBack(t *testing.T) {
	release := make(chan struct{})
	mux := NewMux()
	mux.HandleFunc("note", func(ctx context.Context, _ *Request) (any, error) {
		<-release
		return nil, nil
	})
	a, b := Pipe()
	client := NewPeer(a)
	server := NewPeer(b, Options{Handler: mux, MaxQueuedBytes: 4096})
	released := false
	defer func() {
		if !released { // a failure: let the held handler go, or Wait waits for it
			close(release)
		}
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	}()
	big := strings.Repeat("x", 1024)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 16 {
			if err := client.Notify(ctx, "note", []string{big}); err != nil {
				return
			}
		}
	}()
	waitStats(t, server, "pushing back", func(s Stats) bool { return s.PushBack > 0 && s.QueuedBytes > 0 })
	close(release)
	released = true
	<-done
}

// TestStatsOutbound: a message being written to a remote side that does
// not read counts in OutboundBytes.
func TestStatsOutbound(t *testing.T) {
	a, b := Pipe()
	p := NewPeer(a)
	defer func() { p.Close(); b.Close(); p.Wait() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Notify(ctx, "note", []int{1})
	waitStats(t, p, "bytes outbound", func(s Stats) bool { return s.OutboundBytes > 0 })
}
