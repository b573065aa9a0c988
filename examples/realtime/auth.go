package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"mime"
	"net/http"
	"sync"
	"time"
)

// The session scheme (see the package doc): POST /login {"name": "alice"}
// makes a random token, remembers whose it is, and sets it as an HttpOnly
// cookie; requireSession, in front of /rpc, refuses an upgrade without a
// known token with 401 and puts the user into the request's context, where
// ws.Server's default BaseContext hands it to every handler of the
// connection (userFrom).

const (
	sessionCookie = "realtime_session"
	sessionTTL    = 12 * time.Hour
	maxSessions   = 10000 // live sessions; more logins are refused
	maxLoginBody  = 1 << 10
)

// sessions maps session tokens to the users they were given to.
type sessions struct {
	mu    sync.Mutex
	users map[string]session // by token
}

type session struct {
	user    string
	expires time.Time
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
	token, ok := s.start(name)
	if !ok {
		http.Error(w, "too many sessions; try again later", http.StatusServiceUnavailable)
		return
	}
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

// start makes a session for user and returns its token, or false when
// there are too many live sessions.
func (s *sessions) start(user string) (string, bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == nil {
		s.users = make(map[string]session)
	}
	if len(s.users) >= maxSessions {
		for t, se := range s.users {
			if now.After(se.expires) {
				delete(s.users, t)
			}
		}
		if len(s.users) >= maxSessions {
			return "", false
		}
	}
	token := rand.Text()
	s.users[token] = session{user: user, expires: now.Add(sessionTTL)}
	return token, true
}

// user returns the user whose session r's cookie names.
func (s *sessions) user(r *http.Request) (string, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.users[c.Value]
	if !ok || time.Now().After(se.expires) {
		return "", false
	}
	return se.user, true
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
