package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// runNATS runs a standalone nats-server with JetStream in the test
// process, on 127.0.0.1:port (-1: a free one), its store in dir, until the
// test ends or stopServer.
func runNATS(t *testing.T, port int, dir string) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		ServerName: "standalone",
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
	})
	if err != nil {
		t.Fatalf("nats-server: %v", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready within 10s")
	}
	t.Cleanup(func() { stopServer(ns) })
	return ns
}

func stopServer(ns *server.Server) {
	ns.Shutdown()
	ns.WaitForShutdown()
}

func serverPort(ns *server.Server) int { return ns.Addr().(*net.TCPAddr).Port }

// startJoined serves a node of the demo in the test process, joined to
// NATS at url as -nats url would, until the test ends; it returns the
// node's base URL.
func startJoined(t *testing.T, name, url string) string {
	t.Helper()
	ln, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), nil)).With("node", name)
	nc, closeNATS, err := connectNATS(natsConfig{URL: url}, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() { done <- serve(ctx, ln, nc, natsConfig{URL: url}.board(), log, func() { close(ready) }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve %s: %v", name, err)
		}
		closeNATS()
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("serve %s: %v", name, err)
	case <-time.After(20 * time.Second):
		t.Fatalf("node %s not ready within 20s", name)
	}
	return pageURL(ln.Addr())
}

// converged waits until every page's node answers board.list and
// board.stats with the same board (the same notes, ids unique, with the
// same likes), holding every acknowledged note in acked with at least its
// acknowledged likes, online pages counted, and one Version, within bound.
// It returns how long that took.
func converged(t *testing.T, bound time.Duration, pages []*page, acked map[int64]int, online int) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < bound {
		last = sameBoard(pages, acked, online)
		if last == "" {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("not converged within %v: %s", bound, last)
	return 0
}

// sameBoard returns "" when every page's node shows one board holding
// acked (id → likes at least), online pages and one Version, else what
// differs. A post or like whose reply was lost may be on the board too.
func sameBoard(pages []*page, acked map[int64]int, online int) string {
	var first map[int64]int
	var version int64
	for i, pg := range pages {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var notes []Note
		var stats Stats
		err := pg.Call(ctx, "board.list", nil, &notes)
		if err == nil {
			err = pg.Call(ctx, "board.stats", nil, &stats)
		}
		cancel()
		if err != nil {
			return fmt.Sprintf("page %d: %v", i, err)
		}
		got := make(map[int64]int, len(notes))
		for _, n := range notes {
			got[n.ID] = n.Likes
		}
		if len(got) != len(notes) {
			return fmt.Sprintf("page %d: %d notes but %d ids", i, len(notes), len(got))
		}
		var top int64
		for id := range got {
			top = max(top, id)
		}
		for id, likes := range acked {
			if id <= top-maxNotes {
				continue // scrolled off the board
			}
			if l, ok := got[id]; !ok || l < likes {
				return fmt.Sprintf("page %d: acknowledged note %d has %d likes (present %v), want %d or more", i, id, l, ok, likes)
			}
		}
		if stats.Online != online {
			return fmt.Sprintf("page %d: online %d, want %d", i, stats.Online, online)
		}
		if i == 0 {
			first, version = got, stats.Version
			continue
		}
		if !maps.Equal(got, first) {
			return fmt.Sprintf("page %d: %d notes, page 0's node %d, or other likes", i, len(got), len(first))
		}
		if stats.Version != version {
			return fmt.Sprintf("page %d: version %d, page 0's %d", i, stats.Version, version)
		}
	}
	return ""
}

// retryPost posts text from pg until it is acknowledged or bound passes,
// and returns the note and how long it took.
func retryPost(t *testing.T, pg *page, text string, bound time.Duration) (Note, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var n Note
		err := pg.Call(ctx, "board.post", map[string]string{"text": text}, &n)
		cancel()
		if err == nil {
			return n, time.Since(start)
		}
		if time.Since(start) > bound {
			t.Fatalf("post %q still failing after %v: %v", text, bound, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestStandaloneRestartKeepsState restarts a standalone nats-server, its
// file store kept, while two nodes run with pages on them: afterwards
// posts and likes work again, every acknowledged note and like is there,
// a page that connects after the restart is counted, and both nodes show
// the same board, online count and version. (Presence used to be in a
// memory bucket, lost by the restart, and the watches never came back.)
func TestStandaloneRestartKeepsState(t *testing.T) {
	dir := t.TempDir()
	ns := runNATS(t, -1, dir)
	port := serverPort(ns)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	a := startJoined(t, "a", url)
	b := startJoined(t, "b", url)
	alice := dialPage(t, a, "alice", "alice")
	bob := dialPage(t, b, "bob", "bob")
	pages := []*page{alice, bob}

	want := make(map[int64]int)
	for i := range 3 {
		n, _ := retryPost(t, pages[i%2], fmt.Sprint("before ", i), 5*time.Second)
		want[n.ID] = 0
	}
	var liked Note
	if err := bob.Call(t.Context(), "board.like", map[string]int64{"id": 1}, &liked); err != nil {
		t.Fatal(err)
	}
	want[1] = 1
	converged(t, 10*time.Second, pages, want, 2)
	t.Logf("before: %d notes", len(want))

	stopServer(ns)
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	runNATS(t, port, dir)

	n, took := retryPost(t, alice, "after the restart", 30*time.Second)
	t.Logf("first post acknowledged %v after the server was back", took.Round(time.Millisecond))
	want[n.ID] = 0
	if err := alice.Call(t.Context(), "board.like", map[string]int64{"id": n.ID}, nil); err != nil {
		t.Fatalf("like after the restart: %v", err)
	}
	want[n.ID] = 1
	carol := dialPage(t, b, "carol", "carol")
	pages = append(pages, carol)
	took = converged(t, 20*time.Second, pages, want, 3)
	t.Logf("converged (board, online 3, version) %v after the server was back", time.Since(start).Round(time.Millisecond))
	_ = took
}

// TestDataDirKeepsBoard: the single-node default (an embedded server, no
// port) keeps its board across a restart of the node when given -data
// DIR, and starts empty without it.
func TestDataDirKeepsBoard(t *testing.T) {
	dir := t.TempDir()
	run := func(cfg natsConfig) (base string, stop func()) {
		ln, err := listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(t.Output(), nil))
		nc, closeNATS, err := connectNATS(cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		ready := make(chan struct{})
		go func() { done <- serve(ctx, ln, nc, cfg.board(), log, func() { close(ready) }) }()
		select {
		case <-ready:
		case <-time.After(20 * time.Second):
			t.Fatal("node not ready within 20s")
		}
		return pageURL(ln.Addr()), func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			closeNATS()
		}
	}
	base, stop := run(natsConfig{Data: dir})
	alice := dialPage(t, base, "alice", "alice")
	n, _ := retryPost(t, alice, "kept", 5*time.Second)
	alice.Close()
	stop()

	base, stop = run(natsConfig{Data: dir})
	bob := dialPage(t, base, "bob", "bob")
	var notes []Note
	if err := bob.Call(t.Context(), "board.list", nil, &notes); err != nil || len(notes) != 1 || !reflect.DeepEqual(notes[0], n) {
		t.Errorf("board.list after a restart with -data: %+v, %v; want %+v", notes, err, n)
	}
	bob.Close()
	stop()

	base, stop = run(natsConfig{})
	defer stop()
	carol := dialPage(t, base, "carol", "carol")
	if err := carol.Call(t.Context(), "board.list", nil, &notes); err != nil || len(notes) != 0 {
		t.Errorf("board.list without -data: %+v, %v; want an empty board", notes, err)
	}
	carol.Close()
}
