package main

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/json"
	"mime"
	"net"
	"net/http"
	"sync"
	"time"
)

// The session scheme (see the package doc): POST /login {"name": "alice"}
// makes a random token, remembers whose it is, and sets it as an HttpOnly
// cookie; requireSession, in front of /rpc, refuses an upgrade without a
// known token with 401 and puts the user into the request's context, where
// ws.Server's default BaseContext hands it to every handler of the
// connection (userFrom). The sessions are bounded and expire (sessions).

const (
	sessionCookie = "realtime_session"
	sessionTTL    = 12 * time.Hour   // a session ends this long after it started
	sessionIdle   = 30 * time.Minute // or once it has not been used for this long
	maxSessions   = 10000            // live sessions in all
	maxPerClient  = 16               // live sessions per client address
	maxLoginBody  = 1 << 10
)

// sessions maps session tokens to the users they were given to. It is
// bounded: per client (the address the login came from) and in all, the
// least recently used session going first when a new one would pass a
// bound, so that no flood of sign-ins, from one address or many, locks
// anyone out (a page whose session went signs in again as it reconnects);
// and sessions expire, after sessionTTL or sessionIdle unused. Nothing
// runs on a timer: expiry is checked as sessions are used, and the least
// recently used are looked at, and dropped once expired, on every login.
type sessions struct {
	mu      sync.Mutex
	byToken map[string]*session
	lru     list.List             // of *session, least recently used first
	clients map[string]*list.List // client address -> its sessions, least recently used first
}

type session struct {
	token, user, client string
	started, used       time.Time
	all, mine           *list.Element // in lru, in its client's list
}

// expired reports whether se is over either of its bounds at now.
func (se *session) expired(now time.Time) bool {
	return now.Sub(se.started) > sessionTTL || now.Sub(se.used) > sessionIdle
}

// userKey is the context key of the authenticated user.
type userKey struct{}

// userFrom returns the user that requireSession authenticated, from a
// handler's ctx (or the request's).
func userFrom(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(userKey{}).(string)
	return u, ok
}

// login serves POST /login {"name": ...}: it starts a session for that name
// and answers {"name": the name as notes will be signed}. Only JSON is
// accepted, so that a form on another site cannot log a visitor in (a
// cross-site JSON POST needs a CORS preflight, which this server never
// allows).
func (s *sessions) login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a JSON object {\"name\": ...}", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, "send Content-Type: application/json", http.StatusUnsupportedMediaType)
		return
	}
	var p struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxLoginBody)).Decode(&p); err != nil {
		http.Error(w, "want a JSON object {\"name\": ...}", http.StatusBadRequest)
		return
	}
	name := cleanName(p.Name)
	if name == "" {
		http.Error(w, "a name is required", http.StatusBadRequest)
		return
	}
	token := s.start(name, clientOf(r))
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    token,
		Path:     "/",
		MaxAge:   int(sessionTTL / time.Second),
		HttpOnly: true, // the page's scripts never see it
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode, // never sent by another site's requests
	})
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"name": name})
}

// start makes a session for user, logged in from client (its address),
// and returns its token; the least recently used session of client, or of
// all, goes if the new one would pass a bound.
func (s *sessions) start(user, client string) string {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byToken == nil {
		s.byToken = make(map[string]*session)
		s.clients = make(map[string]*list.List)
	}
	for e := s.lru.Front(); e != nil && e.Value.(*session).expired(now); e = s.lru.Front() {
		s.drop(e.Value.(*session))
	}
	if mine := s.clients[client]; mine != nil && mine.Len() >= maxPerClient {
		s.drop(mine.Front().Value.(*session))
	}
	if s.lru.Len() >= maxSessions {
		s.drop(s.lru.Front().Value.(*session))
	}
	mine := s.clients[client]
	if mine == nil {
		mine = list.New()
		s.clients[client] = mine
	}
	se := &session{token: rand.Text(), user: user, client: client, started: now, used: now}
	se.all = s.lru.PushBack(se)
	se.mine = mine.PushBack(se)
	s.byToken[se.token] = se
	return se.token
}

// drop forgets se. s.mu held.
func (s *sessions) drop(se *session) {
	delete(s.byToken, se.token)
	s.lru.Remove(se.all)
	mine := s.clients[se.client]
	mine.Remove(se.mine)
	if mine.Len() == 0 {
		delete(s.clients, se.client)
	}
}

// user returns the user whose live session r's cookie names, and counts
// it as used.
func (s *sessions) user(r *http.Request) (string, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.byToken[c.Value]
	if !ok {
		return "", false
	}
	if se.expired(now) {
		s.drop(se)
		return "", false
	}
	se.used = now
	s.lru.MoveToBack(se.all)
	s.clients[se.client].MoveToBack(se.mine)
	return se.user, true
}

// len returns the number of live sessions held, and of client's.
func (s *sessions) len(client string) (all, mine int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.clients[client]; l != nil {
		mine = l.Len()
	}
	return s.lru.Len(), mine
}

// clientOf is the address a request came from, without its port: the
// demo serves browsers directly (behind a proxy, the proxy's header would
// say, for a proxy the server trusts).
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// requireSession lets through only requests with a live session, with the
// user in their context, and refuses the others with 401.
func (s *sessions) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := s.user(r)
		if !ok {
			http.Error(w, "sign in first: POST /login", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
}
