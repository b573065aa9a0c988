package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// signIn posts a login for name to s's handler from the address from,
// and returns the status and the session cookie it set.
func signIn(s *sessions, name, from string) (int, *http.Cookie) {
	r := httptest.NewRequest("POST", "/login", strings.NewReader(`{"name":"`+name+`"}`))
	r.Header.Set("Content-Type", "application/json")
	r.RemoteAddr = from + ":40000"
	w := httptest.NewRecorder()
	s.login(w, r)
	var c *http.Cookie
	if cs := w.Result().Cookies(); len(cs) == 1 {
		c = cs[0]
	}
	return w.Code, c
}

// admitted reports whether s's requireSession lets a request with the
// session cookie c through.
func admitted(s *sessions, c *http.Cookie) bool {
	r := httptest.NewRequest("GET", "/rpc", nil)
	r.AddCookie(c)
	w := httptest.NewRecorder()
	s.requireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})).ServeHTTP(w, r)
	return w.Code == http.StatusOK
}

// TestLoginFloodLocksNobody (issue 30, finding 20): 10,000 anonymous
// logins from one address do not fill the sessions: a new login from
// another address works, and so does the session of a page that signed in
// before the flood, on its next connection; the flooder's own first
// sessions are what went.
func TestLoginFloodLocksNobody(t *testing.T) {
	var s sessions
	_, alice := signIn(&s, "alice", "127.0.0.1")
	var first *http.Cookie
	for i := range 10000 {
		code, c := signIn(&s, "anon", "127.0.0.2")
		if code != http.StatusOK {
			t.Fatalf("login %d of the flood: %d", i+1, code)
		}
		if i == 0 {
			first = c
		}
	}
	code, bob := signIn(&s, "bob", "127.0.0.1")
	if code != http.StatusOK || !admitted(&s, bob) {
		t.Fatalf("a login after the flood: %d", code)
	}
	if !admitted(&s, alice) {
		t.Fatal("a page signed in before the flood is refused on its next connection")
	}
	if admitted(&s, first) {
		t.Fatal("the flood's first session still works (it should have gone, as the flood's least recently used)")
	}
}

// TestSessionsBoundedAndExpire: at most maxPerClient sessions per
// address and maxSessions in all, the least recently used going first; a
// session unused for sessionIdle ends, one in use lasts until sessionTTL
// (on a fake clock).
func TestSessionsBoundedAndExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s sessions
		req := func(token string) *http.Request {
			r := &http.Request{Header: http.Header{}}
			r.AddCookie(&http.Cookie{Name: sessionCookie, Value: token})
			return r
		}
		used := s.start("used", "10.0.0.1")
		idle := s.start("idle", "10.0.0.1")
		for range maxPerClient + 5 {
			time.Sleep(time.Second)
			s.user(req(used))
			s.start("flood", "10.0.0.2")
		}
		if all, mine := s.len("10.0.0.2"); mine != maxPerClient || all != maxPerClient+2 {
			t.Fatalf("%d sessions, %d of the flooding address; want %d of it", all, mine, maxPerClient)
		}
		for range 4 { // 40 minutes, the used session used every 10
			time.Sleep(10 * time.Minute)
			if _, ok := s.user(req(used)); !ok {
				t.Fatal("a session in use ended")
			}
		}
		if _, ok := s.user(req(idle)); ok {
			t.Fatal("a session unused for 40 minutes still works")
		}
		for range 12 * 6 { // to 12 hours
			time.Sleep(10 * time.Minute)
			s.user(req(used))
		}
		if _, ok := s.user(req(used)); ok {
			t.Fatal("a session older than 12 hours still works")
		}
	})
}
