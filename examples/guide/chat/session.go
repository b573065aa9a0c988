package main

import (
	"context"
	"crypto/rand"
	"net/http"
	"sync"

	"github.com/peerwire/jsonrpc/topic"
)

// maxSessions bounds the sessions the app keeps in memory.
const maxSessions = 10000

// app is the chat's state: its Hub and the signed-in sessions.
type app struct {
	hub *topic.Hub

	mu       sync.Mutex
	sessions map[string]string // session token -> user name
}

// userKey finds the signed-in user in a request's (and so a handler's) ctx.
type userKey struct{}

// userFrom returns the user signed in on the connection whose ctx this is.
func userFrom(ctx context.Context) string {
	name, _ := ctx.Value(userKey{}).(string)
	return name
}

// login signs in with any name (a real app checks a password here) and
// sets an HttpOnly session cookie.
func (a *app) login(w http.ResponseWriter, r *http.Request) {
	name := r.FormValue("name")
	if name == "" || len(name) > 64 {
		http.Error(w, "name: 1 to 64 bytes", http.StatusBadRequest)
		return
	}
	token := rand.Text()
	a.mu.Lock()
	if len(a.sessions) >= maxSessions {
		clear(a.sessions) // a real app expires sessions; this one starts over
	}
	a.sessions[token] = name
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: "session", Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}

// requireSession refuses a request without a valid session with 401 and
// puts the user in the request's context; behind ws.Server, every handler
// of the connection sees it in its ctx.
func (a *app) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("session")
		a.mu.Lock()
		name := ""
		if err == nil {
			name = a.sessions[c.Value]
		}
		a.mu.Unlock()
		if name == "" {
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, name)))
	})
}
