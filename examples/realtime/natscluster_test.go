package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// natsCluster is a NATS cluster run the way production runs it, in the
// test process: three servers with routes to each other and JetStream, each
// with its file store in a directory of its own, on loopback ports fixed
// for the test so that a server restarts where it was.
type natsCluster struct {
	t       *testing.T
	opts    []*server.Options
	mu      sync.Mutex
	servers []*server.Server // nil while down
}

func runCluster(t *testing.T) *natsCluster {
	t.Helper()
	c := &natsCluster{t: t}
	const n = 3
	client, route := make([]int, n), make([]int, n)
	for i := range n {
		client[i], route[i] = freePort(t), freePort(t)
	}
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", route[i]))
	}
	for i := range n {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("s%d", i+1),
			Host:       "127.0.0.1",
			Port:       client[i],
			JetStream:  true,
			StoreDir:   t.TempDir(),
			Cluster:    server.ClusterOpts{Name: "demo", Host: "127.0.0.1", Port: route[i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
			NoLog:      true,
			NoSigs:     true,
		})
	}
	c.servers = make([]*server.Server, n)
	for i := range n {
		c.start(i)
	}
	c.waitLeader(30 * time.Second)
	c.waitMesh(30 * time.Second)
	t.Cleanup(func() {
		for i := range n {
			c.stop(i)
		}
	})
	return c
}

// url lists the servers' client URLs, as -nats takes them.
func (c *natsCluster) url() string {
	var urls []string
	for _, o := range c.opts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(urls, ",")
}

func (c *natsCluster) start(i int) {
	c.t.Helper()
	o := *c.opts[i]
	ns, err := server.NewServer(&o)
	if err != nil {
		c.t.Fatalf("server %d: %v", i+1, err)
	}
	ns.Start()
	if !ns.ReadyForConnections(20 * time.Second) {
		c.t.Fatalf("server %d not ready within 20s", i+1)
	}
	c.mu.Lock()
	c.servers[i] = ns
	c.mu.Unlock()
}

// stop shuts server i down (its store stays), if it is up.
func (c *natsCluster) stop(i int) {
	c.mu.Lock()
	ns := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if ns != nil {
		stopServer(ns)
	}
}

// leader returns the index of the JetStream meta-leader, or -1.
func (c *natsCluster) leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ns := range c.servers {
		if ns != nil && ns.JetStreamIsLeader() {
			return i
		}
	}
	return -1
}

func (c *natsCluster) waitLeader(bound time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(bound)
	for c.leader() < 0 {
		if time.Now().After(deadline) {
			c.t.Fatalf("no JetStream meta-leader within %v", bound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitMesh waits until every server that is up has routes to all the
// others and a current JetStream, as a restarted server has only some time
// after it accepts clients: a node connected to it meanwhile misses the
// broadcasts published on the others.
func (c *natsCluster) waitMesh(bound time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		c.mu.Lock()
		ok := true
		for _, ns := range c.servers {
			if ns == nil {
				continue
			}
			var peers []string
			if rz, err := ns.Routez(nil); err == nil {
				for _, r := range rz.Routes {
					peers = append(peers, r.RemoteName)
				}
			}
			slices.Sort(peers)
			if len(slices.Compact(peers)) < len(c.servers)-1 || !ns.JetStreamIsCurrent() {
				ok = false
			}
		}
		c.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the NATS cluster not meshed within %v", bound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// withClients returns the servers that have client connections.
func (c *natsCluster) withClients() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var idx []int
	for i, ns := range c.servers {
		if ns != nil && ns.NumClients() > 0 {
			idx = append(idx, i)
		}
	}
	return idx
}

// load is pages posting and liking on every node until stop: what was
// acknowledged, and how long each post took to reach a page on another
// node.
type load struct {
	mu      sync.Mutex
	acked   map[int64]int // note id → acknowledged likes
	fails   int
	latency []time.Duration // cross-node: post sent → board.posted at a page of another node
	sent    map[string]time.Time
	seen    int           // notes the watcher was told of
	p0acked int           // the first poster's notes acknowledged
	lastOKs []time.Time   // per poster
	acks    [][]time.Time // per poster: when each post and like was acknowledged
	stopped chan struct{}
	wg      sync.WaitGroup
}

// startLoad makes each poster post (and like its previous note) every
// 150 ms until stop; watcher, a page on another node than the first
// poster, times the first poster's notes reaching it.
func startLoad(posters []*page, watcher *page) *load {
	l := &load{acked: make(map[int64]int), sent: make(map[string]time.Time), stopped: make(chan struct{}),
		lastOKs: make([]time.Time, len(posters)), acks: make([][]time.Time, len(posters))}
	for pi, pg := range posters {
		l.wg.Go(func() {
			var last int64
			for i := 0; ; i++ {
				select {
				case <-l.stopped:
					return
				case <-time.After(150 * time.Millisecond):
				}
				text := fmt.Sprintf("p%d-%d", pi, i)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				l.mu.Lock()
				l.sent[text] = time.Now()
				l.mu.Unlock()
				var n Note
				err := pg.Call(ctx, "board.post", map[string]string{"text": text}, &n)
				if err == nil && last != 0 {
					err = pg.Call(ctx, "board.like", map[string]int64{"id": last}, nil)
					if err == nil {
						l.mu.Lock()
						l.acked[last]++
						l.mu.Unlock()
					}
				}
				cancel()
				l.mu.Lock()
				if n.ID != 0 {
					l.acked[n.ID] += 0
					last = n.ID
					if pi == 0 {
						l.p0acked++
					}
				}
				if err != nil {
					l.fails++
				} else {
					l.lastOKs[pi] = time.Now()
					l.acks[pi] = append(l.acks[pi], l.lastOKs[pi])
				}
				l.mu.Unlock()
			}
		})
	}
	for _, pg := range append(slices.Clone(posters), watcher) {
		l.wg.Go(func() { drainPage(pg, l.stopped) })
	}
	for _, pg := range posters {
		if pg != watcher {
			l.wg.Go(func() {
				for {
					select {
					case <-l.stopped:
						return
					case <-pg.posted:
					}
				}
			})
		}
	}
	l.wg.Go(func() {
		for {
			select {
			case <-l.stopped:
				return
			case n := <-watcher.posted:
				l.mu.Lock()
				l.seen++
				if !strings.HasPrefix(n.Text, "p0-") {
					l.mu.Unlock()
					continue
				}
				if at, ok := l.sent[n.Text]; ok {
					l.latency = append(l.latency, time.Since(at))
				}
				l.mu.Unlock()
			}
		}
	})
	return l
}

// drainPage reads and drops what is pushed to pg but posted notes, until
// stop, so that its handlers never wait (a full channel would hold the
// page's notifications lane, and its Close).
func drainPage(pg *page, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-pg.liked:
		case <-pg.cleared:
		case <-pg.stats:
		}
	}
}

func (l *load) stop() {
	close(l.stopped)
	l.wg.Wait()
}

// mark returns the failures, the cross-node latencies and the first
// poster's acknowledged notes counted so far, to measure from.
func (l *load) mark() (fails, latencies, p0acked int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fails, len(l.latency), l.p0acked
}

// recovered waits until every poster has had a post acknowledged after
// at, and returns how long after at the last of them was.
func (l *load) recovered(t *testing.T, at time.Time, bound time.Duration) time.Duration {
	t.Helper()
	for {
		l.mu.Lock()
		var last time.Time
		ok := true
		for _, ts := range l.lastOKs {
			ok = ok && ts.After(at)
			if ts.After(last) {
				last = ts
			}
		}
		l.mu.Unlock()
		if ok {
			return last.Sub(at)
		}
		if time.Since(at) > bound {
			t.Fatalf("not every poster had a post acknowledged within %v of the fault", bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stall returns the longest time any poster went without an acknowledged
// post between from and to: how long posting stopped on the worst node.
func (l *load) stall(from, to time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var worst time.Duration
	for _, acks := range l.acks {
		prev := from
		for _, at := range acks {
			if at.Before(from) || at.After(to) {
				continue
			}
			worst = max(worst, at.Sub(prev))
			prev = at
		}
		worst = max(worst, to.Sub(prev))
	}
	return worst
}

// p99 of the cross-node latencies recorded since mark from.
func (l *load) p99(from int) time.Duration {
	l.mu.Lock()
	d := slices.Clone(l.latency[from:])
	l.mu.Unlock()
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[(len(d)*99)/100]
}

func (l *load) ackedCopy() map[int64]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[int64]int, len(l.acked))
	for k, v := range l.acked {
		m[k] = v
	}
	return m
}

// TestNATSClusterFailover runs two nodes on a three-server NATS cluster
// (routes, JetStream, file stores; the nodes given all three URLs), with
// pages posting and liking on both throughout, and takes servers away:
// the server a node is connected to, then the JetStream meta-leader, then
// each of the three in turn, each restarted with its store after (and the
// cluster meshed again before the next fault). Posting must go on (a post is
// acknowledged again within 15 s of each fault), and at the end every
// acknowledged note and like is on the board, ids are unique, and both
// nodes show the same board, online count and version (within 20 s).
func TestNATSClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-server NATS cluster")
	}
	c := runCluster(t)
	a := startJoined(t, "a", c.url())
	b := startJoined(t, "b", c.url())
	alice := dialPage(t, a, "alice", "alice")
	bob := dialPage(t, b, "bob", "bob")
	carol := dialPage(t, b, "carol", "carol")
	retryPost(t, alice, "first", 20*time.Second) // the buckets are made, with 3 replicas
	l := startLoad([]*page{alice, bob}, carol)

	fault := func(name string, victim int) {
		time.Sleep(2 * time.Second) // some posts before
		fails, lat, p0 := l.mark()
		at := time.Now()
		c.stop(victim)
		l.recovered(t, at, 15*time.Second)
		time.Sleep(2 * time.Second) // some posts after
		nf, nlat, np0 := l.mark()
		t.Logf("%s (server s%d): posting stalled at most %v on a node; %d calls failed; %d of %d cross-node pushes timed, p99 %v",
			name, victim+1, l.stall(at, time.Now()).Round(time.Millisecond), nf-fails, nlat-lat, np0-p0, l.p99(lat).Round(time.Millisecond))
		c.start(victim)
		c.waitLeader(20 * time.Second)
		c.waitMesh(20 * time.Second)
	}
	fault("kill the server a node is connected to", c.withClients()[0])
	fault("kill the JetStream meta-leader", c.leader())
	for i := range 3 {
		fault("restart all three, one after another", i)
	}
	time.Sleep(2 * time.Second)
	l.stop()
	acked := l.ackedCopy()
	took := converged(t, 20*time.Second, []*page{alice, bob, carol}, acked, 3)
	t.Logf("watcher saw %d notes, %d latencies", l.seen, len(l.latency))
	t.Logf("%d notes acknowledged, all on both nodes' boards %v after the load stopped; cross-node push p99 over the run %v",
		len(acked), took.Round(time.Millisecond), l.p99(0).Round(time.Millisecond))
}
