package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// freezer is a loopback TCP proxy to a NATS server that can stop
// forwarding without closing anything, as a paused (SIGSTOP) server looks
// from its clients: connections stay open, nothing comes back.
type freezer struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	frozen bool
	thawed chan struct{} // closed when not frozen
	conns  []net.Conn
	wg     sync.WaitGroup
}

// newFreezer proxies a free loopback port to target until the test ends.
func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target, thawed: make(chan struct{})}
	close(f.thawed)
	f.wg.Go(f.accept)
	t.Cleanup(f.close)
	return f
}

func (f *freezer) url() string { return "nats://" + f.ln.Addr().String() }

func (f *freezer) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", f.target)
		if err != nil {
			c.Close()
			continue
		}
		f.mu.Lock()
		f.conns = append(f.conns, c, s)
		f.mu.Unlock()
		f.wg.Go(func() { f.pipe(s, c) })
		f.wg.Go(func() { f.pipe(c, s) })
	}
}

// pipe copies from src to dst, holding what it read while frozen.
func (f *freezer) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		f.mu.Lock()
		thawed := f.thawed
		f.mu.Unlock()
		<-thawed
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// freeze stops forwarding; thaw forwards again what was held.
func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.frozen {
		f.frozen, f.thawed = true, make(chan struct{})
	}
}

func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen {
		f.frozen = false
		close(f.thawed)
	}
}

func (f *freezer) close() {
	f.ln.Close()
	f.thaw()
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// healthOf returns /healthz's status code and state, and how long it took.
func healthOf(t *testing.T, base string) (int, map[string]any, time.Duration) {
	t.Helper()
	start := time.Now()
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(base + "healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	defer resp.Body.Close()
	var h map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("/healthz body: %v", err)
	}
	return resp.StatusCode, h, time.Since(start)
}

// syncBuffer is a log destination tests may read while it is written.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveAsync serves a node joined to url in the test process and returns
// its base URL at once, without waiting for the board; stop ends it and
// returns how long serve took to return.
func serveAsync(t *testing.T, url string, out io.Writer) (base string, stop func() time.Duration) {
	t.Helper()
	ln, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(out, t.Output()), nil))
	nc, closeNATS, err := connectNATS(natsConfig{URL: url}, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, nc, natsConfig{URL: url}.board(), log, nil) }()
	var once sync.Once
	var took time.Duration
	stop = func() time.Duration {
		once.Do(func() {
			start := time.Now()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not return within 10s of its end")
			}
			took = time.Since(start)
			closeNATS()
		})
		return took
	}
	t.Cleanup(func() { stop() })
	return pageURL(ln.Addr()), stop
}

// TestHealthzWhileWaitingForNATS: a node whose NATS is not there yet
// answers /healthz at once, 503, saying it waits and for which URL, logs
// that URL, refuses /rpc with 503 until the board is loaded, and comes up
// once the server does; then it stops within 2 s with NATS up, and
// within 2 s with NATS down, and within 2 s when NATS never came.
func TestHealthzWhileWaitingForNATS(t *testing.T) {
	port := freePort(t)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	var out syncBuffer
	base, stop := serveAsync(t, url, &out)

	code, h, took := healthOf(t, base)
	if code != http.StatusServiceUnavailable || h["state"] != "waiting for NATS" || h["url"] != url {
		t.Fatalf("healthz while NATS is away: %d %v", code, h)
	}
	if took > time.Second {
		t.Errorf("healthz took %v, want at once (under 1s)", took)
	}
	resp, err := http.Get(base + "rpc")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/rpc before the board is loaded: %s", resp.Status)
	}
	eventually(t, func() string {
		if !strings.Contains(out.String(), "waiting for NATS") || !strings.Contains(out.String(), url) {
			return "the log does not say it waits for " + url + ":\n" + out.String()
		}
		return ""
	})

	ns := runNATS(t, port, t.TempDir())
	eventually(t, func() string {
		if code, h, _ := healthOf(t, base); code != http.StatusOK || h["state"] != "connected" {
			return "healthz once NATS is up: " + strconv.Itoa(code) + " " + h["state"].(string)
		}
		return ""
	})
	dialPage(t, base, "alice", "alice")
	stopServer(ns) // NATS down while the node stops
	eventually(t, func() string {
		if code, h, _ := healthOf(t, base); code != http.StatusServiceUnavailable || h["state"] != "reconnecting" {
			return "healthz once NATS is down: " + strconv.Itoa(code) + " " + h["state"].(string)
		}
		return ""
	})
	if took := stop(); took > 2*time.Second {
		t.Errorf("a node with NATS down stopped in %v, want 2s at most", took)
	} else {
		t.Logf("a node with NATS down stopped in %v", took.Round(time.Millisecond))
	}

	// NATS never there.
	_, stop = serveAsync(t, url, io.Discard)
	time.Sleep(200 * time.Millisecond)
	if took := stop(); took > 2*time.Second {
		t.Errorf("a node waiting for NATS stopped in %v, want 2s at most", took)
	}

	// NATS up.
	runNATS(t, port, t.TempDir())
	base, stop = serveAsync(t, url, io.Discard)
	eventually(t, func() string {
		if code, _, _ := healthOf(t, base); code != http.StatusOK {
			return "not up"
		}
		return ""
	})
	dialPage(t, base, "bob", "bob")
	if took := stop(); took > 2*time.Second {
		t.Errorf("a node with NATS up stopped in %v, want 2s at most", took)
	} else {
		t.Logf("a node with NATS up stopped in %v", took.Round(time.Millisecond))
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestBadNATSURL: a malformed -nats is an error at start, not a wait.
func TestBadNATSURL(t *testing.T) {
	for _, bad := range []string{"::::", "nats://", "http://127.0.0.1:4222", "nats://127.0.0.1:99999", "nats://127.0.0.1:4222,::::"} {
		nc, _, err := connectNATS(natsConfig{URL: bad}, slog.New(slog.DiscardHandler))
		if err == nil {
			nc.Close()
			t.Errorf("-nats %q: no error", bad)
		} else if !strings.Contains(err.Error(), "-nats") {
			t.Errorf("-nats %q: %v, want an error naming -nats", bad, err)
		}
	}
	for _, good := range []string{"nats://127.0.0.1:4222", "127.0.0.1:4222", "nats://a:1,nats://b:2", "tls://[::1]:4222", "localhost"} {
		if err := checkURLs(good); err != nil {
			t.Errorf("-nats %q: %v", good, err)
		}
	}
}

// TestPausedServer: NATS stops answering without closing (the proxy in
// front of it freezes, as SIGSTOP would). The node leaves it, by its
// pings, within pingInterval×(maxPingsOut+1) (asserted within 10 s;
// /healthz may say "store unavailable" before, from a failed write of the
// page count, then "reconnecting"); meanwhile a
// page that connects gets its first board.list reply at once (under 1 s:
// OnConnect waits at most joinFlush), /healthz answers at once, and a post
// fails within callTimeout rather than hanging. Once the server answers
// again, posts work and the nodes converge.
func TestPausedServer(t *testing.T) {
	ns := runNATS(t, -1, t.TempDir())
	fr := newFreezer(t, ns.Addr().String())
	a := startJoined(t, "a", fr.url())
	b := startJoined(t, "b", ns.ClientURL())
	alice := dialPage(t, a, "alice", "alice")
	bob := dialPage(t, b, "bob", "bob")
	n, _ := retryPost(t, alice, "before the pause", 5*time.Second)
	acked := map[int64]int{n.ID: 0}
	converged(t, 10*time.Second, []*page{alice, bob}, acked, 2)

	fr.freeze()
	paused := time.Now()
	carol := dialPage(t, a, "carol", "carol")
	var notes []Note
	if err := carol.Call(t.Context(), "board.list", nil, &notes); err != nil || len(notes) != 1 {
		t.Fatalf("board.list on a paused server's node: %d notes, %v", len(notes), err)
	}
	if took := time.Since(paused); took > time.Second {
		t.Errorf("a page connecting during the pause waited %v for its first reply, want under 1s", took)
	} else {
		t.Logf("a page connecting during the pause had its first reply after %v", took.Round(time.Millisecond))
	}
	type result struct {
		err  error
		took time.Duration
	}
	posted := make(chan result, 1)
	go func() {
		start := time.Now()
		err := alice.Call(context.Background(), "board.post", map[string]string{"text": "during the pause"}, nil)
		posted <- result{err, time.Since(start)}
	}()
	for {
		code, h, took := healthOf(t, a)
		if took > time.Second {
			t.Errorf("healthz during the pause took %v", took)
		}
		if code == http.StatusServiceUnavailable && h["state"] == "reconnecting" {
			t.Logf("the pings found the paused server out after %v", time.Since(paused).Round(time.Millisecond))
			break
		}
		if time.Since(paused) > 10*time.Second {
			t.Fatalf("the paused server not left within 10s: healthz %d %v", code, h)
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case r := <-posted:
		if r.err == nil || r.took > callTimeout+2*time.Second {
			t.Errorf("a post during the pause: %v after %v, want an error within %v", r.err, r.took, callTimeout)
		}
	case <-time.After(callTimeout + 5*time.Second):
		t.Fatalf("a post during the pause still waits after %v", callTimeout+5*time.Second)
	}
	fr.thaw()
	thawed := time.Now()
	n, took := retryPost(t, alice, "after the pause", 20*time.Second)
	acked[n.ID] = 0
	t.Logf("first post after the pause acknowledged after %v", took.Round(time.Millisecond))
	converged(t, 20*time.Second, []*page{alice, bob, carol}, acked, 3)
	t.Logf("converged %v after the pause ended", time.Since(thawed).Round(time.Millisecond))
}
