//go:build !js

package ws

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"sync"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/internal/hostguard"
	"github.com/peerwire/jsonrpc/internal/netaddr"
)

// Server is an http.Handler that upgrades each request to a WebSocket and
// runs a Peer on it, configured by Peer (its Handler serves the requests),
// until the connection ends. Mount it on any http.ServeMux, behind the
// middleware that authenticates the request: the handlers' contexts carry
// the request's context values (see BaseContext). The zero value serves
// with the defaults; set the fields before the first request.
//
//	http.Handle("/rpc", &ws.Server{Peer: jsonrpc.Options{Handler: mux}})
//
// Call Shutdown when the http.Server shuts down: http.Server.Shutdown does
// not know about upgraded connections.
type Server struct {
	// Peer configures each connection's Peer: its Handler, limits and
	// Logger. Its OnConnect, if set, runs on every connection before the
	// Server's OnConnect (see there), and its BaseContext, if set, lies
	// under each upgrade request's context (see BaseContext), as on every
	// transport of this module.
	Peer jsonrpc.Options

	// Conn configures each WebSocket connection: message size, keepalive,
	// compression. Default: the defaults of Options.
	Conn Options

	// BaseContext returns the context whose values a connection's handlers
	// see. Default: the upgrade request's context, so that what HTTP
	// middleware put there (the authenticated user) reaches every handler
	// of the connection through its ctx. Its cancellation is not
	// inherited. Peer.BaseContext, if set, lies beneath it: a handler sees
	// a value of this context's, or else Peer.BaseContext's, as a request
	// under http.Server.BaseContext does (TestServerHonoursPeerHooks).
	BaseContext func(r *http.Request) context.Context

	// AllowedHosts lists the names the server answers to, as path.Match
	// patterns matched against the Host header without its port
	// ("chat.example.com", "*.example.com"); an upgrade request naming
	// another host gets 403; "*" takes any name. By default a server
	// answers to no name it was not given: reached on loopback, to
	// loopback names only (localhost, 127.0.0.1, [::1]); reached at
	// another address (listening on all interfaces, say), to IP literals
	// and localhost names. So a page whose name an attacker rebinds to an
	// address of this machine cannot connect (DNS rebinding: such a page's
	// Host and Origin both carry the attacker's name, so the same-origin
	// rule alone lets it in). A server reached by a name, or behind a
	// reverse proxy that passes the public Host on, lists it.
	AllowedHosts []string

	// OriginPatterns lists the host patterns of other origins allowed to
	// connect, matched as coder/websocket's AcceptOptions.OriginPatterns
	// are (the Origin's host, or scheme and host for a pattern holding
	// "://"). By default only same-origin browser requests are accepted,
	// which stops cross-site WebSocket hijacking; the origin's host must
	// then be one the server answers to (see AllowedHosts). Requests
	// without an Origin header (non-browser clients) are always accepted.
	OriginPatterns []string

	// MaxConnections bounds the connections served at once; beyond it an
	// upgrade request gets HTTP 503. Default: 10000.
	MaxConnections int

	// OnConnect, if set, is called with each new Peer and its upgrade
	// request before the Peer reads anything, for example to add it to a
	// jsonrpc.Group (the Peer leaves any Group by itself when its
	// connection ends). Peer.OnConnect, the hook every transport runs,
	// runs first, so that this one, which knows the request, finds the
	// Peer set up as on any transport; when Peer.OnConnect refuses the
	// connection (closes the Peer), this one is not called
	// (TestServerHonoursPeerHooks). The request's context, r.Context(),
	// keeps the request's values and ends with the connection, not with
	// the request, so that work OnConnect starts under it lives as long as
	// the connection (TestOnConnectRequestCtxLivesWithConnection).
	OnConnect func(p *jsonrpc.Peer, r *http.Request)

	// OnDisconnect, if set, is called once a connection has ended and its
	// handlers have returned, with the Peer and why it ended (nil for a
	// clean end, as Peer.Wait returns): once for every Peer that OnConnect
	// was called with, or would have been if set (not for a connection
	// refused by Peer.OnConnect or by Shutdown).
	OnDisconnect func(p *jsonrpc.Peer, cause error)

	mu      sync.Mutex
	conns   map[*jsonrpc.Peer]*Conn
	active  int           // requests admitted and not yet finished
	closing bool          // set by Shutdown: no more requests are admitted
	idle    chan struct{} // made by Shutdown; closed when active drops to 0
}

var _ http.Handler = (*Server)(nil)

// ServeHTTP upgrades the request and hands the connection to its Peer, on a
// goroutine of its own that the Server owns (Shutdown waits for it). It
// returns once the OnConnect hooks have run (Peer.OnConnect, then the
// Server's, while the request and its context are still live): net/http's
// goroutine for the request, its stack and the request's memory are let go
// while the connection lives, so an idle connection costs one goroutine
// parked in the Peer's read loop (docs/performance.md, "Idle
// connections"; TestServeHTTPReturnsOnceConnected). A panic in an
// OnConnect hook closes the connection and is raised again on the
// request's goroutine, where net/http recovers it as it does any handler's.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.admit() {
		http.Error(w, "too many connections or shutting down", http.StatusServiceUnavailable)
		return
	}
	c, err := s.Accept(w, r)
	if err != nil {
		s.leave()
		return // Accept has answered the request
	}
	h := &connHooks{s: s, c: c, r: r, ready: make(chan any, 1)}
	go s.serve(h)
	if v := <-h.ready; v != nil {
		panic(v)
	}
}

// serve runs the Peer of the connection h holds until it ends. The read
// loop parks on this goroutine's stack, which starts small, instead of on
// the request goroutine's, which net/http grew while it parsed the request.
func (s *Server) serve(h *connHooks) {
	defer s.leave()
	defer h.done(nil) // if the hooks never ran
	cause := jsonrpc.Serve(h.c, h.options())
	if h.tracked != nil {
		s.untrack(h.tracked)
	}
	if h.announced && s.OnDisconnect != nil {
		s.OnDisconnect(h.tracked, cause)
	}
}

// Accept upgrades a request to a WebSocket Conn with the Server's options and
// host and origin policy (403 for a Host or Origin refused), for callers
// that run the Peer themselves. On failure it has already written an HTTP
// error reply.
func (s *Server) Accept(w http.ResponseWriter, r *http.Request) (*Conn, error) {
	if err := hostguard.Check(r, s.AllowedHosts, s.OriginPatterns); err != nil {
		err = fmt.Errorf("ws: %w", err)
		http.Error(w, err.Error(), http.StatusForbidden)
		return nil, err
	}
	o := s.Conn.withDefaults()
	// The origin was checked above, by the rule httprpc shares.
	ao := &websocket.AcceptOptions{InsecureSkipVerify: true}
	if o.Compression {
		ao.CompressionMode = websocket.CompressionNoContextTakeover
	}
	conn := new(Conn)
	conn.listen(&ao.OnPingReceived, &ao.OnPongReceived)
	hw := &hijackRecorder{ResponseWriter: w}
	c, err := websocket.Accept(hw, r, ao)
	if err != nil {
		return nil, err
	}
	var transport io.ReadWriteCloser
	if hw.conn != nil {
		transport = hw.conn
		conn.remote = hw.conn.RemoteAddr()
	} else {
		conn.remote = netaddr.OfRequest(r) // a ResponseWriter that hid its connection
	}
	return conn.init(c, transport, &o), nil
}

// hijackRecorder keeps the connection that coder/websocket hijacks, so that
// Conn.Close can drop it when the close handshake goes unanswered, and read
// from it when it lingers.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w, ok := h.ResponseWriter.(interface{ WriteHeaderNow() }); ok {
		w.WriteHeaderNow() // as coder/websocket does for gin's writer
	}
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = c
	return c, brw, err
}

func (h *hijackRecorder) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// Connections returns the connections ServeHTTP is serving now, those
// whose handshake is under way included: what MaxConnections bounds (a
// Conn that Accept made for its caller to run is not counted). For
// metrics (the otel module's ObserveWebSockets); safe to call at any time.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// admit counts a new connection, or refuses it when full or shutting down.
func (s *Server) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	max := s.MaxConnections
	if max <= 0 {
		max = 10000
	}
	if s.closing || s.active >= max {
		return false
	}
	s.active++
	return true
}

func (s *Server) leave() {
	s.mu.Lock()
	s.active--
	if s.closing && s.active == 0 {
		close(s.idle) // once: nothing is admitted while closing
	}
	s.mu.Unlock()
}

func (s *Server) track(p *jsonrpc.Peer, c *Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	if s.conns == nil {
		s.conns = make(map[*jsonrpc.Peer]*Conn)
	}
	s.conns[p] = c
	return true
}

func (s *Server) untrack(p *jsonrpc.Peer) {
	s.mu.Lock()
	delete(s.conns, p)
	s.mu.Unlock()
}

// Shutdown stops accepting connections, lets in-flight calls finish until
// ctx ends, closes every connection with status 1001 (going away), and
// waits for their handlers to return. When ctx ends first, it closes the
// remaining connections at once (each Close waits at most 1 s for the
// other side's close frame) and returns ctx's error without waiting for
// handlers that are still running, as http.Server.Shutdown does: they
// return in their own time, and so do the ServeHTTP calls running them.
// Shutdown may be called more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closing {
		s.closing = true
		s.idle = make(chan struct{})
		if s.active == 0 {
			close(s.idle)
		}
	}
	idle := s.idle
	peers := maps.Clone(s.conns)
	s.mu.Unlock()

	errs := make(chan error, len(peers))
	for p, c := range peers {
		c.SetCloseStatus(websocket.StatusGoingAway, "server shutting down")
		go func() { errs <- p.Shutdown(ctx) }()
	}
	var err error
	for range peers {
		if e := <-errs; e != nil {
			err = e
		}
	}
	select {
	case <-idle:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
