package topic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// wsSite is a Hub behind a ws.Server on loopback. While closed is set, the
// server refuses upgrades with 503 (a client away); peers holds the
// server-side Peer of each connection.
type wsSite struct {
	hub    *topic.Hub
	srv    *ws.Server
	hs     *httptest.Server
	url    string
	closed atomic.Bool
	mu     sync.Mutex
	peer   *jsonrpc.Peer // the latest connection's
}

func newWSSite(t testing.TB, hub *topic.Hub) *wsSite { return newWSSitePacked(t, hub, 0) }

// newWSSitePacked is newWSSite with jsonrpc.Options.PackNotifications set
// to pack on the server's Peers.
func newWSSitePacked(t testing.TB, hub *topic.Hub, pack int) *wsSite {
	t.Helper()
	s := &wsSite{hub: hub}
	mux := jsonrpc.NewMux()
	hub.Register(mux)
	s.srv = &ws.Server{Peer: jsonrpc.Options{Handler: mux, PackNotifications: pack}, OnConnect: func(p *jsonrpc.Peer, _ *http.Request) {
		s.mu.Lock()
		s.peer = p
		s.mu.Unlock()
	}}
	s.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.closed.Load() {
			http.Error(w, "away", http.StatusServiceUnavailable)
			return
		}
		s.srv.ServeHTTP(w, r)
	}))
	s.url = "ws" + strings.TrimPrefix(s.hs.URL, "http")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		s.srv.Shutdown(ctx)
		s.hs.Close()
		hub.Close()
	})
	return s
}

// drop closes the latest connection from the server's side.
func (s *wsSite) drop() {
	s.mu.Lock()
	p := s.peer
	s.mu.Unlock()
	if p != nil {
		p.Close()
	}
}

// follow starts a ws.Client of s with a Follower recording into rec, and
// subscribes it to topic "t".
func follow(t testing.TB, s *wsSite, rec *recorder) (*ws.Client, *topic.Follower) {
	t.Helper()
	f := rec.follower()
	mux := jsonrpc.NewMux()
	f.Register(mux)
	c := ws.NewClient(s.url, ws.ClientOptions{
		Peer:       jsonrpc.Options{Handler: mux},
		OnConnect:  f.Resubscribe,
		MinBackoff: 5 * time.Millisecond,
		MaxBackoff: 20 * time.Millisecond,
	})
	t.Cleanup(func() { c.Close() })
	p, err := c.Peer(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Subscribe(testCtx(t), p, "t"); err != nil {
		t.Fatal(err)
	}
	return c, f
}

// want is the events of a Follower that subscribed at reset and then got
// seqs from..to.
func want(epoch string, reset, from, to uint64) []string {
	ev := []string{fmt.Sprintf("reset %s:%d", epoch, reset)}
	for s := from; s <= to; s++ {
		ev = append(ev, fmt.Sprintf("%s:%d", epoch, s))
	}
	return ev
}

// TestFollowerExactlyOnceAcrossDrops: a ws.Client whose connection the
// server closes again and again while messages are published sees every
// message exactly once, in order, with no reset but the first subscribe's:
// each reconnection recovers what it missed from the Hub's history.
func TestFollowerExactlyOnceAcrossDrops(t *testing.T) {
	s := newWSSite(t, &topic.Hub{Allow: topic.AllowAll})
	rec := newRecorder()
	c, _ := follow(t, s, rec)
	first := rec.await(t, 1)[0]
	epoch := strings.TrimSuffix(strings.TrimPrefix(first, "reset "), ":0")
	const n = 2000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; i <= n; i++ {
			if _, err := s.hub.Publish(context.Background(), "t", i); err != nil {
				t.Error(err)
				return
			}
			if i%100 == 0 {
				s.drop()
			}
			time.Sleep(50 * time.Microsecond)
		}
	})
	wg.Wait()
	got := strings.Join(rec.await(t, n+1), " ")
	if w := strings.Join(want(epoch, 0, 1, n), " "); got != w {
		t.Fatalf("events differ from exactly once in order (%d events)", len(rec.snapshot()))
	}
	if c.Reconnects() < 5 {
		t.Fatalf("only %d reconnections: the test did not drop the connection", c.Reconnects())
	}
	time.Sleep(20 * time.Millisecond)
	if ev := rec.snapshot(); len(ev) != n+1 {
		t.Fatalf("%d events, want %d", len(ev), n+1)
	}
	t.Logf("%d messages over %d connections", n, c.Reconnects()+1)
}

// TestFollowerTakesPackedMessages: with PackNotifications on the server's
// Peers, a Follower over WebSocket sees 2,000 messages published back to
// back (which queue for it, and so go out packed in batch arrays) exactly
// once and in seq order.
func TestFollowerTakesPackedMessages(t *testing.T) {
	const n = 2000
	s := newWSSitePacked(t, &topic.Hub{Allow: topic.AllowAll, MaxQueue: 2 * n}, 64)
	rec := newRecorder()
	c, _ := follow(t, s, rec)
	first := rec.await(t, 1)[0]
	epoch := strings.TrimSuffix(strings.TrimPrefix(first, "reset "), ":0")
	for i := 1; i <= n; i++ {
		publish(t, s.hub, "t", i)
	}
	got := strings.Join(rec.await(t, n+1), " ")
	if w := strings.Join(want(epoch, 0, 1, n), " "); got != w {
		t.Fatalf("events differ from exactly once in order (%d events)", len(rec.snapshot()))
	}
	if r := c.Reconnects(); r != 0 {
		t.Fatalf("%d reconnections: the messages were not all taken on one connection", r)
	}
}

// TestFollowerAwayBeyondHistory: a client away while fewer messages than
// the history holds were published gets them on reconnecting; one away
// while more were published gets a reset at the topic's last position,
// and the messages after it.
func TestFollowerAwayBeyondHistory(t *testing.T) {
	for _, tc := range []struct {
		name      string
		missed    uint64
		recovered bool
	}{
		{"within the history", 8, true},
		{"beyond the history", 50, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newWSSite(t, &topic.Hub{Allow: topic.AllowAll, Store: &topic.Memory{MaxBytes: 10 * (64 + 2)}}) // 10 messages of 2 bytes
			rec := newRecorder()
			c, _ := follow(t, s, rec)
			epoch := strings.TrimSuffix(strings.TrimPrefix(rec.await(t, 1)[0], "reset "), ":0")
			for i := 1; i <= 3; i++ {
				publish(t, s.hub, "t", 10+i)
			}
			rec.await(t, 4)
			s.closed.Store(true)
			s.drop()
			deadline := time.Now().Add(wait)
			for c.State() != ws.Reconnecting {
				if time.Now().After(deadline) {
					t.Fatal("the client did not notice the drop")
				}
				time.Sleep(time.Millisecond)
			}
			for i := uint64(1); i <= tc.missed; i++ {
				publish(t, s.hub, "t", 10+i)
			}
			last := 3 + tc.missed
			s.closed.Store(false)
			var ev []string
			if tc.recovered {
				ev = want(epoch, 0, 1, last)
			} else {
				ev = append(want(epoch, 0, 1, 3), fmt.Sprintf("reset %s:%d", epoch, last))
			}
			n := len(ev)
			got, w := strings.Join(rec.await(t, n), " "), strings.Join(ev, " ")
			if got != w {
				t.Fatalf("the application saw\n\t%s\nwant\n\t%s", got, w)
			}
			publish(t, s.hub, "t", 99)
			if got := rec.await(t, n+1)[n]; got != fmt.Sprintf("%s:%d", epoch, last+1) {
				t.Fatalf("after catching up: %s, want %s:%d", got, epoch, last+1)
			}
		})
	}
}

// TestFollowerRecoversAfterSlowConsumerDrop: a client that stops taking its
// messages is dropped as a jsonrpc.Group drops a member (its connection
// ended with jsonrpc.ErrSlowConsumer) and nobody waits for it; once it
// takes messages again it reconnects and recovers from the history what
// it had not taken, each message once, in order.
func TestFollowerRecoversAfterSlowConsumerDrop(t *testing.T) {
	s := newWSSite(t, &topic.Hub{Allow: topic.AllowAll, MaxQueue: 8, Store: &topic.Memory{MaxBytes: 64 << 20}})
	rec := newRecorder()
	release := make(chan struct{})
	var once sync.Once
	f := rec.follower()
	onMessage := f.OnMessage
	f.OnMessage = func(m topic.Message) {
		once.Do(func() { <-release }) // the first message blocks the client
		onMessage(m)
	}
	mux := jsonrpc.NewMux()
	f.Register(mux)
	c := ws.NewClient(s.url, ws.ClientOptions{
		Peer:       jsonrpc.Options{Handler: mux, MaxQueuedBytes: 64 << 10},
		OnConnect:  f.Resubscribe,
		MinBackoff: 5 * time.Millisecond,
		MaxBackoff: 20 * time.Millisecond,
	})
	defer c.Close()
	p, err := c.Peer(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Subscribe(testCtx(t), p, "t"); err != nil {
		t.Fatal(err)
	}
	epoch := strings.TrimSuffix(strings.TrimPrefix(rec.await(t, 1)[0], "reset "), ":0")
	s.mu.Lock()
	server := s.peer
	s.mu.Unlock()
	data := strings.Repeat("x", 4000)
	n := uint64(0)
	for ; n < 20000; n++ {
		select {
		case <-server.Done():
		default:
			publish(t, s.hub, "t", data)
			continue
		}
		break
	}
	if err := server.Wait(); !errors.Is(err, jsonrpc.ErrSlowConsumer) {
		t.Fatalf("after %d messages the server's Peer ended with %v, want ErrSlowConsumer", n, err)
	}
	const after = 50 // published while the client is away: only the history has them
	for range after {
		publish(t, s.hub, "t", data)
	}
	n += after
	close(release)
	got := strings.Join(rec.await(t, int(n)+1), " ")
	if w := strings.Join(want(epoch, 0, 1, n), " "); got != w {
		t.Fatalf("after the drop the client did not get each of %d messages once, in order", n)
	}
	// The catch-up runs in OnConnect, before the Client counts the
	// reconnection.
	deadline := time.Now().Add(wait)
	for c.Reconnects() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the client got every message without reconnecting")
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("dropped after %d messages of 4 kB; %d reconnections", n-after, c.Reconnects())
}
