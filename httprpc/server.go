package httprpc

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/internal/hostguard"
	"github.com/peerwire/jsonrpc/internal/layerctx"
)

// Server is an http.Handler that serves JSON-RPC over plain HTTP POST, one
// request at a time: the body is one message, a single request or a batch,
// and the reply goes back in the response body. Each HTTP request gets a
// Peer of its own (jsonrpc.Serve on a one-shot connection), so every rule
// of the specification is the Peer's: a parse error is answered with
// -32700 and id null, [] with one -32600, a batch by id, and so on.
//
//	http.Handle("/rpc", &httprpc.Server{Peer: jsonrpc.Options{Handler: mux}})
//
// The statuses:
//
//   - 200 with Content-Type application/json and the reply: whenever the
//     body holds a call, valid or not (a JSON-RPC error is a reply too).
//   - 202 Accepted with no body when nothing in it gets a reply (a
//     notification, a batch of notifications, a response), once their
//     handlers have returned. 202, not 204, because that is what MCP's
//     Streamable HTTP transport answers to a notification, and this
//     package serves that transport too (see SessionServer).
//   - 405 with Allow: POST for any other method (MCP clients probe with GET
//     and read 405 as "no server stream"); 415 when the Content-Type is not
//     application/json; 413 when the body is longer than MaxBodySize; 400
//     when the body cannot be read (the client went away, or a read
//     timeout of the http.Server); 503 with Retry-After when MaxRequests
//     requests are already being served.
//
// A handler's ctx carries the values of the request's context (what
// authentication middleware put there) and is cancelled when the client
// goes away; handlers run until they return or the client leaves, not for
// any timeout of the Peer's. A handler cannot call or notify the client,
// which has no way to answer over plain POST: its Call, Notify and Batch
// fail at once with ErrNoCallbacks, and ReportProgress sends nothing.
//
// Set the http.Server's timeouts against slow clients (NewHTTPServer does).
// The zero Server serves with the defaults; set the fields before the first
// request.
type Server struct {
	// Peer configures each request's Peer: its Handler, limits,
	// Interceptors, Logger and MapError; its OnConnect, if set, gets each
	// request's Peer, and its BaseContext, if set, lies under the
	// request's context (see BaseContext below), as on every transport
	// (TestServerHonoursPeerHooks). The Server sets DrainTimeout (handlers
	// are bounded by the request instead), and puts an interceptor of its
	// own ahead of Interceptors, which refuses a handler's calls to the
	// client.
	Peer jsonrpc.Options

	// BaseContext returns the context whose values the handlers of a
	// request see, over those of Peer.BaseContext (a value of this one's,
	// or else Peer.BaseContext's, as under http.Server.BaseContext).
	// Default: the request's context, so that what HTTP middleware put
	// there (the authenticated user) reaches the handler. Only its values
	// are used: the handlers' ctx ends when the client goes away.
	BaseContext func(r *http.Request) context.Context

	// AllowedHosts lists the names the server answers to, as path.Match
	// patterns matched against the Host header without its port; a
	// request naming another host gets 403; "*" takes any name. By
	// default a server answers to no name it was not given: reached on
	// loopback, to loopback names only (localhost, 127.0.0.1, [::1]);
	// reached at another address (listening on all interfaces, say), to
	// IP literals and localhost names. That keeps out pages whose name an
	// attacker rebinds to an address of this machine (DNS rebinding). A
	// server reached by a name lists it.
	// A page of another origin cannot call a Server at all: it answers no
	// CORS preflight.
	AllowedHosts []string

	// MaxBodySize bounds the request body, in bytes; a longer one is
	// answered with 413 and not parsed. Default: 4 MiB. A negative value
	// means no limit.
	MaxBodySize int64

	// MaxRequests bounds the requests served at once, the reading of their
	// bodies included, across the Server; one more is answered at once
	// with 503 and Retry-After: 1. With MaxBodySize it bounds the memory
	// that bodies hold (256 × 4 MiB = 1 GiB at the defaults). Default:
	// 256. A negative value means no limit.
	MaxRequests int

	once  sync.Once
	slots chan struct{} // the MaxRequests semaphore, nil for no limit
	opts  jsonrpc.Options
}

var _ http.Handler = (*Server)(nil)

// ErrNoCallbacks is returned by a handler's Call, Notify or Batch to the
// client: over plain HTTP POST, the server can only answer.
var ErrNoCallbacks = errors.New("httprpc: a handler cannot call or notify the client over plain HTTP POST")

// DefaultMaxBodySize is the default of Server.MaxBodySize.
const DefaultMaxBodySize = 4 << 20

// forever stands for "no timeout" in DrainTimeout, where a negative value
// would end the Peer at once: the request's end closes the Peer instead.
const forever = time.Duration(1<<63 - 1)

var silent = slog.New(slog.DiscardHandler)

// init fills in the defaults, once.
func (s *Server) init() {
	s.once.Do(func() {
		if n := s.MaxRequests; n >= 0 {
			if n == 0 {
				n = 256
			}
			s.slots = make(chan struct{}, n)
		}
		s.opts = s.Peer
		if s.opts.Logger == nil {
			s.opts.Logger = silent // one for all requests, not one each
		}
		s.opts.DrainTimeout = forever
		s.opts.Interceptors = append([]jsonrpc.Interceptor{s.noCallbacks}, s.Peer.Interceptors...)
	})
}

// noCallbacks refuses what a handler sends to the client; progress is
// dropped, as ReportProgress does when the caller asked for none.
func (s *Server) noCallbacks(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
	if !info.Outbound {
		return next(ctx)
	}
	if d := s.Peer.Progress; d != nil && info.ID.IsZero() && info.Method == d.Method {
		return nil, nil
	}
	return nil, ErrNoCallbacks
}

// ServeHTTP serves one request: see Server for the statuses.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.init()
	if err := hostguard.Check(r, s.AllowedHosts, nil); err != nil {
		http.Error(w, "httprpc: "+err.Error(), http.StatusForbidden)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "httprpc: JSON-RPC takes POST", http.StatusMethodNotAllowed)
		return
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		http.Error(w, "httprpc: Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "httprpc: too many requests at once", http.StatusServiceUnavailable)
			return
		}
	}
	body, status := readBody(w, r, limitOr(s.MaxBodySize, DefaultMaxBodySize))
	if status != 0 {
		http.Error(w, "httprpc: "+http.StatusText(status), status)
		return
	}
	reply, ok := s.serve(r, body)
	if !ok {
		return // the client has gone: nobody to answer
	}
	if reply == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(reply.b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(reply.b)
	reply.free()
}

// serve runs a Peer on body until its handlers have returned, and returns
// its reply (nil for none); ok is false when the client went away first.
func (s *Server) serve(r *http.Request, body []byte) (reply *replyBuf, ok bool) {
	c := &postConn{body: body, remote: r.RemoteAddr}
	o := s.opts
	top := r.Context()
	if s.BaseContext != nil {
		top = s.BaseContext(r)
	}
	o.BaseContext = layerctx.Over(top, s.Peer.BaseContext)
	// The Peer ends when the client goes: its handlers' ctx is cancelled.
	var stop func() bool
	closed := make(chan struct{})
	o.OnConnect = func(p *jsonrpc.Peer) {
		stop = context.AfterFunc(r.Context(), func() {
			defer close(closed)
			p.Close()
		})
		if s.Peer.OnConnect != nil {
			s.Peer.OnConnect(p)
		}
	}
	_ = jsonrpc.Serve(c, o)
	if !stop() {
		<-closed // the AfterFunc ran: wait for it, so it outlives nothing
		c.reply.free()
		return nil, false
	}
	return c.reply, true
}

// isJSON reports whether a Content-Type is application/json, parameters
// (charset) allowed.
func isJSON(ct string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.EqualFold(strings.TrimSpace(ct), "application/json")
}
