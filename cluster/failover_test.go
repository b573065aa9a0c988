package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
)

// startNATSCluster runs three NATS servers with routes to each other on
// 127.0.0.1 (core NATS: the cluster package needs no JetStream) until the
// test ends, and returns them, their options (to start one again where it
// was) and their client URLs, comma-separated.
func startNATSCluster(t *testing.T) ([]*server.Server, []*server.Options, string) {
	t.Helper()
	var routes, urls []string
	route := make([]int, 3)
	var opts []*server.Options
	for i := range route {
		route[i] = freeTCPPort(t)
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", route[i]))
	}
	for i := range 3 {
		port := freeTCPPort(t)
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", port))
		opts = append(opts, &server.Options{
			ServerName: fmt.Sprintf("s%d", i+1),
			Host:       "127.0.0.1",
			Port:       port,
			Cluster:    server.ClusterOpts{Name: "c", Host: "127.0.0.1", Port: route[i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
			NoLog:      true,
			NoSigs:     true,
		})
	}
	var servers []*server.Server
	for _, o := range opts {
		servers = append(servers, startServerWith(t, o))
	}
	waitMeshed(t, servers)
	return servers, opts, strings.Join(urls, ",")
}

// startServerWith runs a NATS server with a copy of o until the test ends.
func startServerWith(t *testing.T, o *server.Options) *server.Server {
	t.Helper()
	oc := *o
	s, err := server.NewServer(&oc)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(wait) {
		t.Fatal("NATS server not ready")
	}
	t.Cleanup(func() { stopNATS(s) })
	return s
}

// waitMeshed waits until every server has a route to every other.
func waitMeshed(t *testing.T, servers []*server.Server) {
	t.Helper()
	waitFor(t, "the routes", func() bool {
		for _, s := range servers {
			names := map[string]bool{}
			if rz, err := s.Routez(nil); err == nil {
				for _, r := range rz.Routes {
					names[r.RemoteName] = true
				}
			}
			if len(names) < len(servers)-1 {
				return false
			}
		}
		return true
	})
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	s := startNATS(t, -1) // a listener that frees its port when stopped
	port := natsPort(s)
	stopNATS(s)
	return port
}

// TestServerOfANodeKilled: on a three-server NATS cluster, the server a
// node is connected to goes away. The node reconnects to another server of
// its URL list (nats.go), resubscribes, and broadcasts and named calls
// cross again; measured from the kill to the first broadcast from the
// other node reaching this node's client, asserted within 10 s.
func TestServerOfANodeKilled(t *testing.T) {
	servers, _, urls := startNATSCluster(t)
	fast := []nats.Option{nats.PingInterval(time.Second), nats.MaxPingsOutstanding(3), nats.ReconnectBufSize(-1)}
	a := newSite(t, urls, cluster.Options{NodeID: "a"}, func(n *cluster.Node, p *jsonrpc.Peer, r *http.Request) {
		joinRoom(n, p, r)
		n.Register("alice", p)
	}, fast...)
	b := newSite(t, urls, cluster.Options{NodeID: "b"}, joinRoom, fast...)
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "whoami", func(context.Context, any) (string, error) { return "alice", nil })
	la := listenWith(t, a, mux)
	lb := listen(t, b)
	flush(t, a, b)

	for _, victim := range []string{"a", "b"} {
		site := map[string]*site{"a": a, "b": b}[victim]
		var srv *server.Server
		for _, s := range servers {
			if s.ClientURL() == site.nc.ConnectedUrl() {
				srv = s
			}
		}
		if srv == nil {
			t.Fatalf("node %s's server not found (%s)", victim, site.nc.ConnectedUrl())
		}
		killed := time.Now()
		stopNATS(srv)
		crossAgain(t, a, b, la, "b-"+victim)
		t.Logf("kill of node %s's server: broadcasts cross again %v after", victim, time.Since(killed).Round(time.Millisecond))
		waitFor(t, "b's own client to hear b", func() bool { return lb.count() > 0 })
		// The servers left: the next victim must not be the one just
		// killed.
		var left []*server.Server
		for _, s := range servers {
			if s != srv {
				left = append(left, s)
			}
		}
		servers = left
	}
}

// listenWith is listen with mux's methods served by the client too.
func listenWith(t *testing.T, s *site, mux *jsonrpc.Mux) *listener {
	t.Helper()
	l := &listener{got: make(map[string][]int)}
	jsonrpc.Register(mux, "tick", func(_ context.Context, tk tick) (any, error) {
		l.mu.Lock()
		l.got[tk.From] = append(l.got[tk.From], tk.Seq)
		l.n++
		l.mu.Unlock()
		return nil, nil
	})
	l.peer, l.srv = dial(t, s, "", jsonrpc.Options{Handler: mux, Cancel: jsonrpc.LSPCancel})
	return l
}

// crossAgain publishes from b until a's client la hears it, then checks a
// named call from b to alice on a; it fails the test after wait.
func crossAgain(t *testing.T, a, b *site, la *listener, from string) {
	t.Helper()
	before := la.count()
	start := time.Now()
	for seq := 0; la.count() == before; seq++ {
		if time.Since(start) > wait {
			t.Fatalf("%s: a's client heard nothing from b within %v", from, wait)
		}
		b.node.Topic("room").Notify("tick", tick{From: from, Seq: seq})
		time.Sleep(5 * time.Millisecond)
	}
	var who string
	if err := b.node.Call(testCtx(t, wait), "alice", "whoami", nil, &who); err != nil || who != "alice" {
		t.Fatalf("%s: named call from b to alice: %q, %v", from, who, err)
	}
}

// TestRollingRestart: the three servers of a NATS cluster restart one
// after another, each where it was; after each, broadcasts and a named
// call cross between two nodes again (asserted within 10 s).
func TestRollingRestart(t *testing.T) {
	servers, opts, urls := startNATSCluster(t)
	fast := []nats.Option{nats.PingInterval(time.Second), nats.MaxPingsOutstanding(3), nats.ReconnectBufSize(-1)}
	a := newSite(t, urls, cluster.Options{NodeID: "a"}, func(n *cluster.Node, p *jsonrpc.Peer, r *http.Request) {
		joinRoom(n, p, r)
		n.Register("alice", p)
	}, fast...)
	b := newSite(t, urls, cluster.Options{NodeID: "b"}, joinRoom, fast...)
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "whoami", func(context.Context, any) (string, error) { return "alice", nil })
	la := listenWith(t, a, mux)
	flush(t, a, b)
	for i := range servers {
		start := time.Now()
		stopNATS(servers[i])
		servers[i] = startServerWith(t, opts[i])
		waitMeshed(t, servers)
		crossAgain(t, a, b, la, fmt.Sprint("after s", i+1))
		t.Logf("restart of s%d: broadcasts and calls cross again %v after it stopped", i+1, time.Since(start).Round(time.Millisecond))
	}
}
