package otel_test

import (
	"context"
	"net"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
	"github.com/peerwire/jsonrpc/otel"
	"github.com/peerwire/jsonrpc/stdio"
	"github.com/peerwire/jsonrpc/ws"
	"go.opentelemetry.io/otel/trace"
)

// TestNetworkPeerAttributes pins network.peer.address and
// network.peer.port, over real loopback transports: both sides of a
// WebSocket and of stdio over TCP carry the other's address (the
// client's spans the server's port, the server's spans the client's own
// port); an HTTP server (plain POST and session) the client's; an HTTP
// client and a Pipe, which know no address, neither attribute.
func TestNetworkPeerAttributes(t *testing.T) {
	type want struct{ client, server bool } // which spans carry the address
	cases := []struct {
		name  string
		want  want
		start func(t *testing.T, co, so jsonrpc.Options) (call func() error, serverPort int)
	}{
		{"WebSocket", want{true, true}, func(t *testing.T, co, so jsonrpc.Options) (func() error, int) {
			srv := &ws.Server{Peer: so}
			hs := httptest.NewServer(srv)
			t.Cleanup(func() { _ = srv.Shutdown(context.Background()); hs.Close() })
			p, err := ws.Dial(context.Background(), "ws"+strings.TrimPrefix(hs.URL, "http"), ws.DialOptions{Peer: co, HTTPClient: hs.Client()})
			if err != nil {
				t.Fatal(err)
			}
			both(t, p, nil)
			return func() error { return p.Call(context.Background(), "add", [2]int{1, 2}, nil) }, portOf(t, hs.URL)
		}},
		{"TCP stdio", want{true, true}, func(t *testing.T, co, so jsonrpc.Options) (func() error, int) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			accepted := make(chan net.Conn, 1)
			go func() {
				c, _ := l.Accept()
				accepted <- c
			}()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			sc := <-accepted
			if sc == nil {
				t.Fatal("accept failed")
			}
			p := both(t, jsonrpc.NewPeer(stdio.NewConn(c, c), co), jsonrpc.NewPeer(stdio.NewConn(sc, sc), so))
			return func() error { return p.Call(context.Background(), "add", [2]int{1, 2}, nil) }, l.Addr().(*net.TCPAddr).Port
		}},
		{"HTTP POST", want{false, true}, func(t *testing.T, co, so jsonrpc.Options) (func() error, int) {
			hs := httptest.NewServer(&httprpc.Server{Peer: so})
			t.Cleanup(hs.Close)
			c := httprpc.NewClient(hs.URL, httprpc.ClientOptions{Peer: co, HTTPClient: hs.Client()})
			return func() error { return c.Call(context.Background(), "add", [2]int{1, 2}, nil) }, portOf(t, hs.URL)
		}},
		{"HTTP session", want{false, true}, func(t *testing.T, co, so jsonrpc.Options) (func() error, int) {
			srv := &httprpc.SessionServer{Peer: so, StartMethods: []string{"add"}}
			hs := httptest.NewServer(srv)
			t.Cleanup(func() { _ = srv.Shutdown(context.Background()); hs.Close() })
			p, err := httprpc.Dial(context.Background(), hs.URL, httprpc.DialOptions{Peer: co, HTTPClient: hs.Client()})
			if err != nil {
				t.Fatal(err)
			}
			both(t, p, nil)
			return func() error { return p.Call(context.Background(), "add", [2]int{1, 2}, nil) }, portOf(t, hs.URL)
		}},
		{"Pipe", want{false, false}, func(t *testing.T, co, so jsonrpc.Options) (func() error, int) {
			a, b := jsonrpc.Pipe()
			p := both(t, jsonrpc.NewPeer(a, co), jsonrpc.NewPeer(b, so))
			return func() error { return p.Call(context.Background(), "add", [2]int{1, 2}, nil) }, 0
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			o := otel.Options{Methods: []string{"add"}}
			co := jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{r.telemetry(t, o).Interceptor()}}
			so := jsonrpc.Options{Handler: testMux(nil), Interceptors: []jsonrpc.Interceptor{r.telemetry(t, o).Interceptor()}}
			call, serverPort := c.start(t, co, so)
			if err := call(); err != nil {
				t.Fatal(err)
			}
			spans := r.waitSpans(t, 2)
			for _, kind := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
				got := attrs(byKind(t, spans, kind).Attributes())
				addr, hasAddr := got["network.peer.address"]
				port, hasPort := got["network.peer.port"]
				carries := c.want.client
				if kind == trace.SpanKindServer {
					carries = c.want.server
				}
				if !carries {
					if hasAddr || hasPort {
						t.Errorf("%v span: network.peer.address %q, port %q; want neither", kind, addr, port)
					}
					continue
				}
				n, _ := strconv.Atoi(port)
				if addr != "127.0.0.1" || n <= 0 {
					t.Errorf("%v span: network.peer.address %q, port %q; want 127.0.0.1 and a port", kind, addr, port)
				}
				if kind == trace.SpanKindClient && n != serverPort {
					t.Errorf("client span: network.peer.port %d, want the server's %d", n, serverPort)
				}
				if kind == trace.SpanKindServer && n == serverPort {
					t.Errorf("server span: network.peer.port %d is the server's own", n)
				}
			}
		})
	}
}

func portOf(t *testing.T, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return n
}
