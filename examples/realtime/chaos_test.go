//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chaosRow is one fault's measured outcome.
type chaosRow struct {
	fault     string
	recovery  time.Duration // the longest a node went without an acknowledged post
	fails     int
	pushes    int
	p99       time.Duration // of a cross-node push during the fault
	firstRepl time.Duration // a page connecting during the fault: its first reply
}

// TestChaos runs the demo's nodes as processes against real nats-server
// processes, with pages posting and liking throughout, and faults one
// after another: on a three-server cluster, SIGKILL the server a node is
// connected to, SIGKILL the JetStream meta-leader, restart all three one
// after another (SIGTERM), SIGSTOP for 10 s the server a node is
// connected to (having had it hand the leadership of the JetStream meta
// group and of the streams a post needs to another: what a node can do
// something about), and SIGSTOP for 10 s the leader of the board's bucket
// (measured, not bounded: every node's writes wait for the raft election,
// 4 to 9 s in nats-server 2.15); then on a standalone server, restart it
// (SIGTERM) with its store. After each fault every node posts again
// within 15 s, and a page connecting during the fault has its first reply
// within 1 s; the first SIGSTOP stalls posting on no node for more than
// 5 s (issue 30, finding 22: 10.3 s). After each topology's faults,
// every acknowledged note and like is on the board, ids are unique, every
// node shows the same board, online count and version within 20 s, and
// every node, sent SIGTERM, exits within 3 s (finding 22: 7.7 s), node a
// with a page posting while the NATS server it is on is stopped. It
// prints a row per fault. It runs with CHAOS=1 (.ci/run sets it).
func TestChaos(t *testing.T) {
	if os.Getenv("CHAOS") == "" {
		t.Skip("set CHAOS=1 to run the chaos test (about two minutes)")
	}
	bin := buildNATSServer(t)
	demo := buildDemo(t)
	var rows []chaosRow

	c := runProcCluster(t, bin)
	na := startNode(t, demo, "a", "-nats", c.url())
	nb := startNode(t, demo, "b", "-nats", c.url())
	a, b := na.url, nb.url
	alice := dialPage(t, a, "alice", "alice")
	bob := dialPage(t, b, "bob", "bob")
	carol := dialPage(t, b, "carol", "carol")
	retryPost(t, alice, "first", 20*time.Second)
	l := startLoad([]*page{alice, bob}, carol)
	fault := func(name string, maxStall time.Duration, do func() (undo func())) {
		t.Helper()
		time.Sleep(2 * time.Second)
		fails, lat, _ := l.mark()
		at := time.Now()
		undo := do()
		// A page connecting to node a during the fault.
		start := time.Now()
		pg := dialPage(t, a, "dave", "dave")
		var notes []Note
		if err := pg.Call(t.Context(), "board.list", nil, &notes); err != nil {
			t.Errorf("%s: board.list of a new page: %v", name, err)
		}
		first := time.Since(start)
		pg.Close()
		if first > time.Second {
			t.Errorf("%s: a page connecting during the fault waited %v for its first reply, want under 1s", name, first)
		}
		row := chaosRow{fault: name, firstRepl: first}
		if undo != nil && strings.HasPrefix(name, "SIGSTOP") {
			time.Sleep(10*time.Second - time.Since(at))
			undo()
			undo = nil
		}
		l.recovered(t, at, 15*time.Second)
		time.Sleep(2 * time.Second)
		row.recovery = l.stall(at, time.Now())
		nf, nlat, _ := l.mark()
		row.fails, row.pushes, row.p99 = nf-fails, nlat-lat, l.p99(lat)
		rows = append(rows, row)
		t.Logf("%s: posting stalled at most %v on a node, %d calls failed, %d cross-node pushes timed, p99 %v, a new page's first reply %v",
			name, row.recovery.Round(time.Millisecond), row.fails, row.pushes, row.p99.Round(time.Millisecond), first.Round(time.Millisecond))
		if maxStall > 0 && row.recovery > maxStall {
			t.Errorf("%s: posting stalled %v on a node, want at most %v", name, row.recovery.Round(time.Millisecond), maxStall)
		}
		if undo != nil {
			undo()
		}
		c.waitHealthy(30 * time.Second)
	}
	restart := func(p *natsProc, sig syscall.Signal) func() (undo func()) {
		return func() func() {
			p.stop(sig)
			return p.start
		}
	}
	pause := func(p *natsProc) func() func() {
		return func() func() {
			p.signal(syscall.SIGSTOP)
			return func() { p.signal(syscall.SIGCONT) }
		}
	}
	fault("SIGKILL the server node a is on", 0, restart(c.serverOf(a), syscall.SIGKILL))
	fault("SIGKILL the JetStream meta-leader", 0, restart(c.leader(), syscall.SIGKILL))
	for _, p := range c.procs {
		fault("restart all three in turn: "+p.name+" (SIGTERM)", 0, func() func() {
			p.stop(syscall.SIGTERM)
			p.start()
			return nil
		})
	}
	paused := c.serverOf(a)
	c.moveLeadersOff(paused)
	fault("SIGSTOP the server node a is on, 10 s", 5*time.Second, func() func() {
		t.Logf("stopping %s (%s); node a is on %s, node b on %s", paused.name, paused.url(), c.serverOf(a).name, c.serverOf(b).name)
		return pause(paused)()
	})
	leader := c.leaderOf("KV_board")
	fault("SIGSTOP the leader of the board's bucket, 10 s", 0, func() func() {
		undo := pause(leader)()
		elected := c.watchLeader("KV_board", leader)
		return func() {
			t.Logf("the bucket's followers elected a new leader %v after its leader stopped", elected())
			undo()
		}
	})
	time.Sleep(time.Second)
	l.stop()
	took := converged(t, 20*time.Second, []*page{alice, bob, carol}, l.ackedCopy(), 3)
	t.Logf("cluster: %d notes acknowledged, on every node's board %v after the load stopped", len(l.ackedCopy()), took.Round(time.Millisecond))
	// Node a again, with a page posting, while the server it is on is
	// stopped: SIGTERM then, calls waiting on NATS and all.
	exits := pausedExit(t, c, na)
	exits = append(exits, terminated(t, "cluster", nb)...)

	// A standalone server, restarted with its store.
	s := newNATSProc(t, bin, "standalone")
	s.start()
	c2 := &procCluster{t: t, procs: []*natsProc{s}}
	nd := startNode(t, demo, "d", "-nats", s.url())
	ne := startNode(t, demo, "e", "-nats", s.url())
	d, e := nd.url, ne.url
	erin := dialPage(t, d, "erin", "erin")
	frank := dialPage(t, e, "frank", "frank")
	grace := dialPage(t, e, "grace", "grace")
	retryPost(t, erin, "first", 20*time.Second)
	l = startLoad([]*page{erin, frank}, grace)
	a, c = d, c2 // fault's new page connects to node d
	fault("restart a standalone server with its store (SIGTERM)", 0, func() func() {
		s.stop(syscall.SIGTERM)
		s.start()
		return nil
	})
	l.stop()
	took = converged(t, 20*time.Second, []*page{erin, frank, grace}, l.ackedCopy(), 3)
	t.Logf("standalone: %d notes acknowledged, on every node's board %v after the load stopped", len(l.ackedCopy()), took.Round(time.Millisecond))
	exits = append(exits, terminated(t, "standalone", nd, ne)...)

	var sb strings.Builder
	fmt.Fprintf(&sb, "\n| Fault | Longest stall of a node's posts | Calls failed | Cross-node pushes timed | p99 of a cross-node push | A new page's first reply |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| %s | %v | %d | %d | %v | %v |\n", r.fault, r.recovery.Round(10*time.Millisecond), r.fails, r.pushes,
			r.p99.Round(time.Millisecond), r.firstRepl.Round(time.Millisecond))
	}
	fmt.Fprintf(&sb, "\nExit after SIGTERM, each node after its topology's faults: %s", strings.Join(exits, ", "))
	t.Log(sb.String())
}

// pausedExit has a page post on node n in a loop, stops (SIGSTOP) the
// NATS server n is on, and a second later sends n SIGTERM: n must exit
// within 3 s, whatever its calls wait for. It returns how long that took.
func pausedExit(t *testing.T, c *procCluster, n *node) []string {
	t.Helper()
	pg := dialPage(t, n.url, "heidi", "heidi")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			pg.Call(ctx, "board.post", map[string]string{"text": fmt.Sprint("last-", i)}, nil)
			cancel()
		}
	}()
	p := c.serverOf(n.url)
	p.signal(syscall.SIGSTOP)
	defer p.signal(syscall.SIGCONT)
	time.Sleep(time.Second)
	took := terminated(t, "cluster, its NATS server stopped", n)
	close(stop)
	<-done
	return took
}

// terminated sends each node SIGTERM in turn, with its pages still
// connected, and fails the test if one takes more than 3 s to exit; it
// returns how long each took.
func terminated(t *testing.T, topology string, nodes ...*node) []string {
	t.Helper()
	var took []string
	for _, n := range nodes {
		start := time.Now()
		n.stop(t, syscall.SIGTERM)
		d := time.Since(start)
		took = append(took, fmt.Sprintf("%s %v", n.name, d.Round(time.Millisecond)))
		if d > 3*time.Second {
			t.Errorf("%s: node %s took %v to exit after SIGTERM, want at most 3 s", topology, n.name, d.Round(time.Millisecond))
		}
	}
	return took
}
