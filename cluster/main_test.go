package cluster_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/ws"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// nodes', the Peers', nats.go's and the embedded server's alike.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every blocking step of the tests.
const wait = 10 * time.Second

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startNATS runs an embedded NATS server on 127.0.0.1 (port -1: a random
// one) until the test ends or stopNATS.
func startNATS(t testing.TB, port int) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatalf("NATS server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(wait) {
		t.Fatal("NATS server not ready")
	}
	t.Cleanup(func() { stopNATS(s) })
	return s
}

func stopNATS(s *server.Server) {
	s.Shutdown()
	s.WaitForShutdown()
}

func natsPort(s *server.Server) int { return s.Addr().(*net.TCPAddr).Port }

// connect opens a NATS connection that reconnects quickly and for ever,
// closed when the test ends.
func connect(t testing.TB, url string, extra ...nats.Option) *nats.Conn {
	t.Helper()
	opts := append([]nats.Option{
		nats.ReconnectWait(20 * time.Millisecond),
		nats.ReconnectJitter(0, 0),
		nats.MaxReconnects(-1),
	}, extra...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("nats.Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// quiet is the tests' default logger.
var quiet = slog.New(slog.DiscardHandler)

// site is one application node: a NATS connection, a Node on it, and a
// ws.Server on a loopback httptest server, all ended by kill (at the
// latest when the test ends).
type site struct {
	nc    *nats.Conn
	node  *cluster.Node
	srv   *ws.Server
	hs    *httptest.Server
	url   string
	peers chan *jsonrpc.Peer // the server-side Peers, once onConnect is done
	once  sync.Once
}

// newSite starts a site on the NATS server at url; onConnect runs for each
// connection, with the upgrade request (its query names the client).
func newSite(t testing.TB, url string, o cluster.Options, onConnect func(n *cluster.Node, p *jsonrpc.Peer, r *http.Request), extra ...nats.Option) *site {
	t.Helper()
	s := &site{nc: connect(t, url, extra...), peers: make(chan *jsonrpc.Peer, 4096)}
	if o.Logger == nil {
		o.Logger = quiet
	}
	node, err := cluster.New(s.nc, o)
	if err != nil {
		t.Fatalf("cluster.New: %v", err)
	}
	s.node = node
	s.srv = &ws.Server{
		Peer:           jsonrpc.Options{Cancel: jsonrpc.LSPCancel},
		MaxConnections: 5000,
		OnConnect: func(p *jsonrpc.Peer, r *http.Request) {
			if onConnect != nil {
				onConnect(node, p, r)
			}
			s.peers <- p
		},
	}
	s.hs = httptest.NewServer(s.srv)
	s.url = "ws" + strings.TrimPrefix(s.hs.URL, "http")
	t.Cleanup(s.kill)
	return s
}

// kill ends the site: its Node, its WebSocket connections, its NATS
// connection.
func (s *site) kill() {
	s.once.Do(func() {
		s.node.Close()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		s.srv.Shutdown(ctx)
		s.hs.Close()
		s.nc.Close()
	})
}

// nextPeer returns the server-side Peer of the site's next connection.
func (s *site) nextPeer(t testing.TB) *jsonrpc.Peer {
	t.Helper()
	select {
	case p := <-s.peers:
		return p
	case <-time.After(wait):
		t.Fatal("no connection reached the site's OnConnect")
		return nil
	}
}

// joinRoom is an onConnect that puts every connection in topic "room".
func joinRoom(n *cluster.Node, p *jsonrpc.Peer, _ *http.Request) { n.Topic("room").Add(p) }

// dial connects a WebSocket client to s (query: the upgrade request's
// query), closed when the test ends, and returns it with its server-side
// Peer, once the site's onConnect has run for it.
func dial(t testing.TB, s *site, query string, o jsonrpc.Options) (client, server *jsonrpc.Peer) {
	t.Helper()
	url := s.url
	if query != "" {
		url += "?" + query
	}
	p, err := ws.Dial(testCtx(t, wait), url, ws.DialOptions{Peer: o})
	if err != nil {
		t.Fatalf("ws.Dial: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p, s.nextPeer(t)
}

// flush waits until NATS has every subscription each site's node made.
func flush(t testing.TB, sites ...*site) {
	t.Helper()
	for _, s := range sites {
		if err := s.node.Flush(testCtx(t, wait)); err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
}

// waitFor polls cond until it holds, or fails the test after wait.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
