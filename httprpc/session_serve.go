package httprpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/internal/hostguard"
	"github.com/peerwire/jsonrpc/internal/layerctx"
)

// ServeHTTP serves one request of the transport.
func (s *SessionServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := hostguard.Check(r, s.AllowedHosts, s.OriginPatterns); err != nil {
		http.Error(w, "httprpc: "+err.Error(), http.StatusForbidden)
		return
	}
	if s.cors(w, r) {
		return // a preflight, answered
	}
	if v := r.Header.Get(ProtocolVersionHeader); v != "" && !slices.Contains(s.versions(), v) {
		http.Error(w, fmt.Sprintf("unsupported %s %q: this server supports %s", ProtocolVersionHeader, v, strings.Join(s.versions(), ", ")), http.StatusBadRequest)
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

// logger is Peer.Logger, or a silent one.
func (s *SessionServer) logger() *slog.Logger {
	if s.Peer.Logger != nil {
		return s.Peer.Logger
	}
	return silent
}

func (s *SessionServer) versions() []string {
	if s.ProtocolVersions == nil {
		return DefaultProtocolVersions
	}
	return s.ProtocolVersions
}

// lookup returns the session r names, or answers r (400, 403 or 404) and
// returns nil. A request whose Identity is not the session's gets 404, as
// for a session that does not exist.
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
	if s.Identity != nil {
		who, err := s.Identity(r)
		if err != nil {
			http.Error(w, "httprpc: "+err.Error(), http.StatusForbidden)
			return nil
		}
		if who != ss.identity {
			http.Error(w, "unknown or expired session", http.StatusNotFound)
			return nil
		}
	}
	return ss
}

// serveDelete ends the session r names: a clean end, as Close is (its
// handlers' contexts are cancelled, its Peer's Wait returns nil, and
// nothing is logged), since the client said it is done.
func (s *SessionServer) serveDelete(w http.ResponseWriter, r *http.Request) {
	ss := s.lookup(w, r)
	if ss == nil {
		return
	}
	s.drop(ss)
	if p := ss.getPeer(); p != nil {
		p.Close() // which ends ss
	}
	ss.end(jsonrpc.ErrClosed) // if it had no Peer yet
	w.WriteHeader(http.StatusNoContent)
}

// start creates a session for r and starts its Peer, or answers r (403,
// 429 or 503) and returns nil. A refusal builds nothing.
func (s *SessionServer) start(w http.ResponseWriter, r *http.Request) *session {
	who, client, ok := s.client(w, r)
	if !ok {
		return nil
	}
	s.mu.Lock()
	limit := limitOr(s.MaxSessions, DefaultMaxSessions)
	perClient := limitOr(s.MaxSessionsPerClient, DefaultMaxSessionsPerClient)
	var evicted *session
	switch {
	case s.closing || limit > 0 && len(s.sessions) >= limit:
		s.mu.Unlock()
		unavailable(w, s.closing)
		return nil
	case perClient > 0 && len(s.clients[client]) >= perClient:
		if evicted = s.evict(client); evicted == nil {
			s.mu.Unlock()
			refuse(w, http.StatusTooManyRequests, jsonrpc.CodeOverloaded, "too many sessions of this client, all in use")
			return nil
		}
	}
	ss := newSession(s, newSessionID(), who, client)
	ss.remote = r.RemoteAddr
	if s.sessions == nil {
		s.sessions = make(map[string]*session)
		s.clients = make(map[string][]*session)
	}
	s.sessions[ss.id] = ss
	s.clients[client] = append(s.clients[client], ss)
	s.wg.Add(1)
	s.mu.Unlock()
	if evicted != nil {
		evicted.end(errEvicted)
	}
	if !s.run(ss, r) {
		http.Error(w, "httprpc: the server refused the session (Peer.OnConnect closed its Peer)", http.StatusForbidden)
		return nil
	}
	return ss
}

// errEvicted is the cause of a session ended to make room for a newer one
// of its client, past MaxSessionsPerClient.
var errEvicted = fmt.Errorf("%w: never used, and its client started another past MaxSessionsPerClient", ErrSessionIdle)

// evict forgets the oldest session of client that was never used and has
// nothing going on, and returns it (the caller ends it), or nil if every
// session of client is in use. Called with s.mu held (ss.mu nests in it).
func (s *SessionServer) evict(client string) *session {
	for _, ss := range s.clients[client] {
		ss.mu.Lock()
		ok := ss.evictable()
		ss.mu.Unlock()
		if ok {
			s.forget(ss)
			return ss
		}
	}
	return nil
}

// client returns r's identity (Identity's, or "") and the key that
// MaxSessionsPerClient counts it by, or answers r (403) and reports false.
func (s *SessionServer) client(w http.ResponseWriter, r *http.Request) (who, key string, ok bool) {
	if s.Identity != nil {
		who, err := s.Identity(r)
		if err != nil {
			http.Error(w, "httprpc: "+err.Error(), http.StatusForbidden)
			return "", "", false
		}
		return who, "identity " + who, true
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "", "address " + host, true
}

// run starts ss's Peer, which reads first the request r carried, and
// returns once OnConnect has run: false if Peer.OnConnect refused the
// session (closed its Peer).
func (s *SessionServer) run(ss *session, r *http.Request) bool {
	o := s.Peer
	top := r.Context()
	if s.BaseContext != nil {
		top = s.BaseContext(r)
	}
	o.BaseContext = layerctx.Over(top, s.Peer.BaseContext)
	o.Interceptors = append([]jsonrpc.Interceptor{ss.requestValues}, s.Peer.Interceptors...)
	ready := make(chan struct{})
	req := r
	announced := false // the SessionServer's OnConnect saw the Peer: OnDisconnect will
	o.OnConnect = func(p *jsonrpc.Peer) {
		defer close(ready)
		ss.setPeer(p)
		defer func() { req = nil }() // the Peer keeps this func: let the request go
		if s.Peer.OnConnect != nil {
			s.Peer.OnConnect(p)
			select {
			case <-p.Done():
				return // refused: the SessionServer's hooks are not told of it
			default:
			}
		}
		announced = true
		if s.OnConnect != nil {
			s.OnConnect(p, req)
		}
	}
	go func() {
		defer s.wg.Done()
		cause := jsonrpc.Serve(ss, o)
		s.drop(ss)
		ss.end(cause)
		if announced && s.OnDisconnect != nil {
			s.OnDisconnect(ss.getPeer(), cause)
		}
	}()
	<-ready
	return announced
}

// unavailable answers 503 with a JSON-RPC error naming no call.
func unavailable(w http.ResponseWriter, closing bool) {
	if closing {
		refuse(w, http.StatusServiceUnavailable, jsonrpc.CodeShuttingDown, "server shutting down")
		return
	}
	refuse(w, http.StatusServiceUnavailable, jsonrpc.CodeOverloaded, "too many sessions")
}

// refuse answers status with a JSON-RPC error naming no call.
func refuse(w http.ResponseWriter, status int, code int64, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(code, msg))
}

// drop forgets ss: later requests naming it get 404.
func (s *SessionServer) drop(ss *session) {
	s.mu.Lock()
	s.forget(ss)
	s.mu.Unlock()
}

// forget drops ss from the sessions and its client's. Called with s.mu
// held.
func (s *SessionServer) forget(ss *session) {
	if s.sessions[ss.id] != ss {
		return
	}
	delete(s.sessions, ss.id)
	list := s.clients[ss.client]
	if i := slices.Index(list, ss); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(s.clients, ss.client)
	} else {
		s.clients[ss.client] = list
	}
}

// Sessions returns the number of sessions alive.
func (s *SessionServer) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Shutdown stops starting sessions, ends every session (their Peers shut
// down: running handlers may finish and their replies go out within ctx),
// and waits until each has ended and OnDisconnect has returned. Each event
// stream still open ends with an event that says the session ended, so
// that a client learns it at once rather than try to resume it (Dial's
// Peer ends with ErrSessionExpired). If ctx
// ends first, the sessions left are closed at once (their handlers' ctxs
// are cancelled) and Shutdown returns ctx's error without waiting for
// handlers that do not return.
func (s *SessionServer) Shutdown(ctx context.Context) error {
	s.shutting.Store(true)
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
