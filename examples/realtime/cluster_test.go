//go:build unix

package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"github.com/peerwire/jsonrpc/internal/testbin"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildDemo builds the demo once for the test, into t.TempDir(), and
// returns the binary's path.
func buildDemo(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "realtime")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// node is one process of the demo.
type node struct {
	name string
	cmd  *exec.Cmd
	url  string // http://127.0.0.1:PORT/
	out  testbin.Buffer
	done chan struct{} // closed once the process has been reaped
}

// startNode runs the demo binary with args (and -addr 127.0.0.1:0) and
// returns once it prints its URL. The process is stopped with SIGTERM (and
// killed if it lingers) and reaped when the test ends; its output is logged.
func startNode(t *testing.T, bin, name string, args ...string) *node {
	t.Helper()
	n := &node{name: name, done: make(chan struct{})}
	n.cmd = exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	n.cmd.Stderr = &n.out
	stdout, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(&n.out, line)
			if u, ok := strings.CutPrefix(line, "realtime demo: open "); ok {
				urlc <- u
			}
		}
		io.Copy(io.Discard, stdout)
		n.cmd.Wait()
		close(n.done)
	}()
	t.Cleanup(func() {
		n.stop(t, syscall.SIGTERM)
		t.Logf("node %s %v:\n%s", name, args, n.out.String())
	})
	select {
	case n.url = <-urlc:
		return n
	case <-n.done:
		t.Fatalf("node %s exited before serving:\n%s", name, n.out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("node %s did not print its URL within 30s:\n%s", name, n.out.String())
	}
	panic("unreachable")
}

// stop sends sig to the node and waits for it to exit, killing it after
// 10 s.
func (n *node) stop(t *testing.T, sig syscall.Signal) {
	n.cmd.Process.Signal(sig)
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		t.Errorf("node %s did not exit within 10s of %v: killed", n.name, sig)
		n.cmd.Process.Kill()
		<-n.done
	}
}

// startCluster starts the first node with an embedded NATS server on a
// free loopback port (-nats-embed) and the others joining it (-nats).
func startCluster(t *testing.T, bin string, nodes int) (natsURL string, ns []*node) {
	t.Helper()
	addr := freeAddr(t)
	ns = append(ns, startNode(t, bin, "n1", "-nats-embed", "-nats-addr", addr))
	natsURL = "nats://" + addr
	for i := 2; i <= nodes; i++ {
		ns = append(ns, startNode(t, bin, fmt.Sprint("n", i), "-nats", natsURL))
	}
	return natsURL, ns
}

// statsSeen reads pushed stats until ok accepts one. Pushes come from the
// node that made each change, so across nodes they may arrive out of
// version order (a page keeps the highest).
func statsSeen(t *testing.T, pg *page, within time.Duration, ok func(Stats) bool) Stats {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case s := <-pg.stats:
			if ok(s) {
				return s
			}
		case <-deadline:
			t.Fatalf("timed out after %v waiting for the expected board.stats notification", within)
		}
	}
}

// eventually calls f every 50 ms until it returns "" or 10 s have passed,
// then fails with its last answer.
func eventually(t *testing.T, f func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		msg := f()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCluster runs three processes of the demo on one NATS (the first with
// -nats-embed, the others with -nats): pages on different nodes see each
// other's notes, likes and clears, ids stay unique under concurrent posts
// on every node, a fourth node started late answers board.list with the
// full board, a clear on one node clears every node's board, and the pages
// of a node that dies drop out of the count once its key ages out.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the demo and runs four processes")
	}
	bin := buildDemo(t)
	natsURL, nodes := startCluster(t, bin, 3)
	ctx := t.Context()
	alice := dialPage(t, nodes[0].url, "alice", "alice")
	bob := dialPage(t, nodes[1].url, "bob", "bob")
	carol := dialPage(t, nodes[2].url, "carol", "carol")
	statsSeen(t, alice, 10*time.Second, func(s Stats) bool { return s.Online == 3 })

	var first Note
	if err := alice.Call(ctx, "board.post", map[string]string{"text": "from node 1"}, &first); err != nil {
		t.Fatal(err)
	}
	for _, pg := range []*page{bob, carol} {
		if got := next(t, pg.posted, "alice's note on another node"); !reflect.DeepEqual(got, first) {
			t.Fatalf("told %+v, want %+v", got, first)
		}
	}
	var second Note
	if err := bob.Call(ctx, "board.post", map[string]string{"text": "from node 2"}, &second); err != nil {
		t.Fatal(err)
	}
	if second.ID == first.ID || second.Author != "bob" {
		t.Fatalf("bob's note %+v after alice's %+v", second, first)
	}
	for _, pg := range []*page{alice, carol} {
		for got := next(t, pg.posted, "bob's note on another node"); !reflect.DeepEqual(got, second); got = next(t, pg.posted, "bob's note") {
			if !reflect.DeepEqual(got, first) {
				t.Fatalf("told %+v, want %+v", got, second)
			}
		}
	}
	var liked Note
	if err := carol.Call(ctx, "board.like", map[string]int64{"id": first.ID}, &liked); err != nil {
		t.Fatal(err)
	}
	if got := next(t, alice.liked, "carol's like on node 1"); !reflect.DeepEqual(got, liked) || got.Likes != 1 {
		t.Fatalf("alice was told %+v, want %+v with 1 like", got, liked)
	}

	// Concurrent posts on every node: every id is taken once.
	const each = 5
	var wg sync.WaitGroup
	errs := make(chan error, 3*each)
	for _, pg := range []*page{alice, bob, carol} {
		wg.Go(func() {
			for i := range each {
				errs <- pg.Call(ctx, "board.post", map[string]string{"text": fmt.Sprint("burst ", i)}, nil)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	const total = 2 + 3*each
	for i, pg := range []*page{alice, bob, carol} {
		eventually(t, func() string {
			var notes []Note
			var stats Stats
			if err := pg.Call(ctx, "board.list", nil, &notes); err != nil {
				return err.Error()
			}
			if err := pg.Call(ctx, "board.stats", nil, &stats); err != nil {
				return err.Error()
			}
			ids := make(map[int64]bool)
			for _, note := range notes {
				ids[note.ID] = true
			}
			if len(notes) != total || len(ids) != total || stats.Posted != total || stats.Notes != total {
				return fmt.Sprintf("node %d: %d notes, %d distinct ids, stats %+v; want %d of each", i+1, len(notes), len(ids), stats, total)
			}
			return ""
		})
	}

	// A node started now replays the board from JetStream.
	late := startNode(t, bin, "n4-late", "-nats", natsURL)
	dave := dialPage(t, late.url, "dave", "dave")
	var notes []Note
	if err := dave.Call(ctx, "board.list", nil, &notes); err != nil {
		t.Fatal(err)
	}
	if len(notes) != total || !reflect.DeepEqual(notes[0], liked) || !reflect.DeepEqual(notes[1], second) || !slices.IsSortedFunc(notes, func(a, b Note) int { return cmp.Compare(a.ID, b.ID) }) {
		t.Fatalf("late node's board.list: %d notes starting %+v; want %d, oldest first, starting %+v, %+v", len(notes), notes[:min(2, len(notes))], total, liked, second)
	}
	statsSeen(t, carol, 10*time.Second, func(s Stats) bool { return s.Online == 4 })

	// A clear on node 2 clears every node's board.
	var res struct{ Cleared int }
	if err := bob.Call(ctx, "board.clear", nil, &res); err != nil {
		t.Fatal(err)
	}
	if res.Cleared != total {
		t.Fatalf("cleared %d, want %d", res.Cleared, total)
	}
	for _, pg := range []*page{alice, carol, dave} {
		if by := next(t, pg.cleared, "board.cleared"); by != "bob" {
			t.Fatalf("cleared by %q, want bob", by)
		}
	}
	eventually(t, func() string {
		var notes []Note
		if err := dave.Call(ctx, "board.list", nil, &notes); err != nil || len(notes) != 0 {
			return fmt.Sprintf("late node after the clear: %d notes, %v", len(notes), err)
		}
		return ""
	})

	// Node 3 dies without a word: its page count ages out of the bucket
	// and the others see Online drop (alice, bob, dave).
	seen := drainStats(alice)
	nodes[2].stop(t, syscall.SIGKILL)
	start := time.Now()
	statsSeen(t, alice, onlineTTL+10*time.Second, func(s Stats) bool { return s.Version > seen && s.Online == 3 })
	t.Logf("a killed node's pages left the count after %v", time.Since(start).Round(time.Second))
}

// drainStats reads the stats pushed to pg so far and returns the highest
// version among them.
func drainStats(pg *page) int64 {
	var v int64
	for {
		select {
		case s := <-pg.stats:
			v = max(v, s.Version)
		default:
			return v
		}
	}
}

// TestNodeWithoutNATS: a node that loses NATS (the node embedding it is
// killed) says so in its log and in /healthz (503), and keeps serving its
// own pages from its copy of the board.
func TestNodeWithoutNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the demo and runs two processes")
	}
	bin := buildDemo(t)
	_, nodes := startCluster(t, bin, 2)
	health := func(n *node) (int, string) {
		resp, err := http.Get(n.url + "healthz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := health(nodes[1]); code != http.StatusOK || !strings.Contains(body, `"nats":"connected"`) {
		t.Fatalf("healthz with NATS up: %d %s", code, body)
	}
	bob := dialPage(t, nodes[1].url, "bob", "bob")
	var note Note
	if err := bob.Call(t.Context(), "board.post", map[string]string{"text": "before NATS went away"}, &note); err != nil {
		t.Fatal(err)
	}

	nodes[0].stop(t, syscall.SIGKILL) // NATS goes with it
	eventually(t, func() string {
		if code, body := health(nodes[1]); code != http.StatusServiceUnavailable {
			return fmt.Sprintf("healthz after NATS went away: %d %s, want 503", code, body)
		}
		return ""
	})
	eventually(t, func() string { // the log line may reach us after /healthz
		if !strings.Contains(nodes[1].out.String(), "nats disconnected") {
			return "node 2's log does not say NATS went away:\n" + nodes[1].out.String()
		}
		return ""
	})
	var notes []Note
	if err := bob.Call(t.Context(), "board.list", nil, &notes); err != nil || len(notes) != 1 || notes[0].ID != note.ID {
		t.Errorf("board.list on node 2 without NATS: %+v, %v; want the note posted before", notes, err)
	}
}
