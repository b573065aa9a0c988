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
// test ends, and returns them and their client URLs, comma-separated.
func startNATSCluster(t *testing.T) ([]*server.Server, string) {
	t.Helper()
	var routes []string
	ports := make([]int, 3)
	for i := range ports {
		ports[i] = freeTCPPort(t)
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	var servers []*server.Server
	var urls []string
	for i := range 3 {
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("s%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			Cluster:    server.ClusterOpts{Name: "c", Host: "127.0.0.1", Port: ports[i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
			NoLog:      true,
			NoSigs:     true,
		})
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		if !s.ReadyForConnections(wait) {
			t.Fatal("NATS server not ready")
		}
		t.Cleanup(func() { stopNATS(s) })
		servers = append(servers, s)
		urls = append(urls, s.ClientURL())
	}
	waitFor(t, "the routes", func() bool {
		for _, s := range servers {
			if s.NumRoutes() < 2 {
				return false
			}
		}
		return true
	})
	return servers, strings.Join(urls, ",")
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
	servers, urls := startNATSCluster(t)
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
		before := la.count()
		killed := time.Now()
		stopNATS(srv)
		// b publishes until a's client hears it again.
		for seq := 0; la.count() == before; seq++ {
			if time.Since(killed) > wait {
				t.Fatalf("kill of node %s's server: a's client heard nothing from b within %v", victim, wait)
			}
			b.node.Topic("room").Notify("tick", tick{From: "b-" + victim, Seq: seq})
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("kill of node %s's server: broadcasts cross again %v after", victim, time.Since(killed).Round(time.Millisecond))
		var who string
		if err := b.node.Call(testCtx(t, wait), "alice", "whoami", nil, &who); err != nil || who != "alice" {
			t.Fatalf("named call after the kill: %q, %v", who, err)
		}
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
