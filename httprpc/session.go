package httprpc

// Sessions: the Streamable HTTP transport of the Model Context Protocol
// (revisions 2025-03-26, 2025-06-18 and 2025-11-25), kept generic.
//
// A SessionServer serves one endpoint. A POST without a session id starts
// a session: a *jsonrpc.Peer of its own, symmetric as every Peer is, whose
// id the response's Mcp-Session-Id header carries; every later request of
// the session names it in the same header. A POST carries one message (or
// a batch). If it holds no request, the reply is 202 Accepted once the
// Peer has read it. Otherwise the reply is an event stream
// (text/event-stream, when the client accepts it) carrying, in order, what
// the session's handlers send while they serve those requests (calls back
// to the client, notifications, progress) and then the response, after
// which the stream ends; or, for a client that accepts only JSON, the
// response as application/json. A GET opens the session's standalone
// stream, which carries what the Peer sends outside any request (and what
// a handler sends after its POST's stream has ended). A DELETE ends the
// session.
//
// Every event has an id, unique within the session, that names its stream
// and its place in it ("<stream>-<seq>"). A client whose stream was cut
// sends a GET with Last-Event-ID: the events after that one on that
// stream are replayed, then the stream goes on live (for a POST's stream,
// up to its response). Nothing is lost or repeated while the events are
// within the session's buffer (MaxBufferedBytes); see SessionServer for
// what happens past it.
//
// The client side is Dial, which returns a *jsonrpc.Peer over such an
// endpoint.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// Defaults of SessionServer.
const (
	DefaultIdleTimeout      = 10 * time.Minute
	DefaultMaxSessions      = 10000
	DefaultMaxBufferedBytes = 1 << 20
)

// DefaultProtocolVersions are the MCP revisions whose MCP-Protocol-Version
// header a SessionServer accepts by default.
var DefaultProtocolVersions = []string{"2025-03-26", "2025-06-18", "2025-11-25"}

// The headers of the transport.
const (
	SessionIDHeader       = "Mcp-Session-Id"
	ProtocolVersionHeader = "MCP-Protocol-Version"
	lastEventIDHeader     = "Last-Event-ID"
)

// ErrSlowClient is wrapped by the cause a session ends with when the
// events its client has not taken (it does not read its event streams, or
// opens none) would pass MaxBufferedBytes.
var ErrSlowClient = errors.New("httprpc: client does not read its event streams")

// ErrSessionIdle is the cause a session ends with when it has been idle
// for IdleTimeout.
var ErrSessionIdle = errors.New("httprpc: session idle")

// ErrSessionDeleted is the cause a session ends with when its client
// sends DELETE.
var ErrSessionDeleted = errors.New("httprpc: session deleted by the client")

// errShutdown is the cause of the sessions Shutdown ends.
var errShutdown = errors.New("httprpc: server shutting down")

// SessionServer is an http.Handler that serves the Streamable HTTP
// transport with sessions: each session is a *jsonrpc.Peer configured by
// Peer, which lives across the requests that name its id, until the
// client deletes it, it idles past IdleTimeout, its client stops taking
// its events, or Shutdown. The zero value serves with the defaults; set
// the fields before the first request. All its methods may be called
// concurrently.
//
//	http.Handle("/mcp", &httprpc.SessionServer{Peer: jsonrpc.Options{Handler: mux}})
//
// Answers, besides the streams: 202 for a POST with no request; 400 for a
// request without a session id once it is not a POST that starts one, for
// a malformed Last-Event-ID, and for an MCP-Protocol-Version not in
// ProtocolVersions; 403 for an Origin refused (see OriginPatterns); 404 for
// a session id unknown, expired or deleted (the client must start a new
// session); 405 for a method other than POST, GET and DELETE; 406 for an
// Accept header that takes neither JSON nor an event stream; 410 for a
// Last-Event-ID whose following events are no longer buffered (the stream
// cannot be resumed); 413 for a body over MaxBodySize; 415 for a POST that
// is not application/json; 503, with a JSON-RPC error body, past
// MaxSessions or while shutting down.
//
// A second GET for a stream already being written (the standalone stream,
// or a resumption) replaces the first, whose response ends: a client that
// reconnects after a cut may do so before the server sees the cut.
//
// What the SessionServer bounds by itself: each body (MaxBodySize), the
// sessions (MaxSessions), each session's buffered events
// (MaxBufferedBytes), and a session's inbound and outbound work through
// Peer's MaxQueuedBytes and MaxOutboundBytes, as for any Peer. What the
// http.Server must bound: the time a client may take to send its headers
// and body (ReadHeaderTimeout, ReadTimeout: a POST's body is read to the
// end, or to MaxBodySize, before anything else happens) and idle
// keep-alive connections (IdleTimeout). Leave its WriteTimeout at zero: an
// event stream lasts as long as the call it carries; the SessionServer
// gives each write of an event stream a deadline of its own (30 s), and
// writes a comment on a stream silent for 30 s, so that proxies keep it
// open and a client that vanished is found.
type SessionServer struct {
	// Peer configures each session's Peer: its Handler, limits and Logger.
	// Its BaseContext and OnConnect are set by the SessionServer (see
	// BaseContext and OnConnect below).
	Peer jsonrpc.Options

	// BaseContext returns the context whose values a session's handlers
	// see. Default: the context of the request that started the session.
	// Its cancellation is not inherited.
	BaseContext func(r *http.Request) context.Context

	// OnConnect, if set, is called with each new session's Peer, and the
	// request that starts it, before the Peer reads that request.
	OnConnect func(p *jsonrpc.Peer, r *http.Request)

	// OnDisconnect, if set, is called once a session has ended and its
	// handlers have returned, with its Peer and why it ended (as Peer.Wait
	// returns it: wrapping ErrSessionDeleted, ErrSessionIdle or
	// ErrSlowClient, say).
	OnDisconnect func(p *jsonrpc.Peer, cause error)

	// OriginPatterns lists the hosts of other origins whose browser pages
	// may use the endpoint, as path.Match patterns ("*.example.com"). By
	// default only pages of the endpoint's own host may; requests without
	// an Origin header (clients that are not browsers) are always
	// accepted. The transport's specification requires the check: it
	// stops DNS rebinding from reaching a local server.
	OriginPatterns []string

	// ProtocolVersions are the values of the MCP-Protocol-Version header
	// accepted; a request without the header is accepted too. Default:
	// DefaultProtocolVersions.
	ProtocolVersions []string

	// IdleTimeout ends a session that has had no request for this long,
	// unless one of its handlers is still answering a request or one of
	// its event streams is open. Default: DefaultIdleTimeout; negative:
	// never.
	IdleTimeout time.Duration

	// MaxSessions bounds the sessions alive at once; past it, a request
	// that would start one gets 503. Default: DefaultMaxSessions;
	// negative: no limit.
	MaxSessions int

	// MaxBufferedBytes bounds, per session, the bytes of the events kept:
	// those no client has taken yet, and those sent but kept for a
	// resumption, which are at most a quarter of it (256 KiB by default).
	// Sent ones go first, oldest first, when room is needed (a stream
	// cannot then be resumed from before them: 410). When the events not
	// yet taken alone would pass it, the session ends with a cause
	// wrapping ErrSlowClient. So the events of all sessions hold at most
	// MaxSessions times MaxBufferedBytes, and those of sessions whose
	// clients keep up a quarter of that. Default:
	// DefaultMaxBufferedBytes; negative: no limit.
	MaxBufferedBytes int

	// MaxBodySize bounds a POST's body; a larger one gets 413 and is not
	// read further. Default: DefaultMaxBodySize; negative: no limit.
	MaxBodySize int64

	mu       sync.Mutex
	sessions map[string]*session
	closing  bool
	wg       sync.WaitGroup // a goroutine per session, until its Peer has ended
}

var _ http.Handler = (*SessionServer)(nil)

// ServeHTTP serves one request of the transport.
func (s *SessionServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := checkOrigin(r, s.OriginPatterns); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if v := r.Header.Get(ProtocolVersionHeader); v != "" && !slices.Contains(s.versions(), v) {
		http.Error(w, "unsupported "+ProtocolVersionHeader+": "+v, http.StatusBadRequest)
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.servePost(w, r)
	case http.MethodGet:
		s.serveGet(w, r)
	case http.MethodDelete:
		s.serveDelete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *SessionServer) versions() []string {
	if s.ProtocolVersions == nil {
		return DefaultProtocolVersions
	}
	return s.ProtocolVersions
}

// lookup returns the session r names, or answers r (400 or 404) and
// returns nil.
func (s *SessionServer) lookup(w http.ResponseWriter, r *http.Request) *session {
	id := r.Header.Get(SessionIDHeader)
	if id == "" {
		http.Error(w, "missing "+SessionIDHeader+" header", http.StatusBadRequest)
		return nil
	}
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		http.Error(w, "unknown or expired session", http.StatusNotFound)
		return nil
	}
	return ss
}

// serveDelete ends the session r names.
func (s *SessionServer) serveDelete(w http.ResponseWriter, r *http.Request) {
	ss := s.lookup(w, r)
	if ss == nil {
		return
	}
	s.drop(ss)
	ss.end(ErrSessionDeleted)
	w.WriteHeader(http.StatusNoContent)
}

// start creates a session for r and starts its Peer, or answers r (503)
// and returns nil.
func (s *SessionServer) start(w http.ResponseWriter, r *http.Request) *session {
	ss := newSession(s, newSessionID())
	s.mu.Lock()
	limit := limitOr(s.MaxSessions, DefaultMaxSessions)
	if s.closing || limit > 0 && len(s.sessions) >= limit {
		s.mu.Unlock()
		unavailable(w, s.closing)
		return nil
	}
	if s.sessions == nil {
		s.sessions = make(map[string]*session)
	}
	s.sessions[ss.id] = ss
	s.wg.Add(1)
	s.mu.Unlock()

	o := s.Peer
	o.BaseContext = r.Context()
	if s.BaseContext != nil {
		o.BaseContext = s.BaseContext(r)
	}
	ready := make(chan struct{})
	req := r
	o.OnConnect = func(p *jsonrpc.Peer) {
		ss.setPeer(p)
		if s.OnConnect != nil {
			s.OnConnect(p, req)
		}
		req = nil // the Peer keeps this func: let the request go
		close(ready)
	}
	go func() {
		defer s.wg.Done()
		cause := jsonrpc.Serve(ss, o)
		s.drop(ss)
		ss.end(cause)
		if s.OnDisconnect != nil {
			s.OnDisconnect(ss.getPeer(), cause)
		}
	}()
	<-ready
	return ss
}

// unavailable answers 503 with a JSON-RPC error naming no call.
func unavailable(w http.ResponseWriter, closing bool) {
	msg, code := "too many sessions", int64(jsonrpc.CodeOverloaded)
	if closing {
		msg, code = "server shutting down", jsonrpc.CodeShuttingDown
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(errorBody(code, msg))
}

// drop forgets ss: later requests naming it get 404.
func (s *SessionServer) drop(ss *session) {
	s.mu.Lock()
	if s.sessions[ss.id] == ss {
		delete(s.sessions, ss.id)
	}
	s.mu.Unlock()
}

// Sessions returns the number of sessions alive.
func (s *SessionServer) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Shutdown stops starting sessions, ends every session (their Peers shut
// down: running handlers may finish and their replies go out within ctx),
// and waits until each has ended and OnDisconnect has returned. If ctx
// ends first, the sessions left are closed at once (their handlers' ctxs
// are cancelled) and Shutdown returns ctx's error without waiting for
// handlers that do not return.
func (s *SessionServer) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, ss := range all {
		wg.Go(func() {
			if p := ss.getPeer(); p != nil {
				_ = p.Shutdown(ctx)
			}
			ss.end(errShutdown)
		})
	}
	wg.Wait()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newSessionID returns 128 random bits in hex: visible ASCII, as the
// transport requires.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand's documented promise)
	return hex.EncodeToString(b[:])
}

// limitOr is v, or def for 0; negative stays negative (no limit).
func limitOr[T ~int | ~int64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
