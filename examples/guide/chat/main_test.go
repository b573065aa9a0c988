package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve runs the app on a loopback port until the test ends.
func serve(t *testing.T) *httptest.Server {
	a := newApp()
	srv := httptest.NewServer(a.routes())
	t.Cleanup(func() { srv.Close(); a.hub.Close() })
	return srv
}

// signIn posts the login form and returns the session cookie's header.
func signIn(t *testing.T, srv *httptest.Server, name string) http.Header {
	res, err := http.PostForm(srv.URL+"/login", url.Values{"name": {name}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent || len(res.Cookies()) != 1 {
		t.Fatalf("login: %s, cookies %v", res.Status, res.Cookies())
	}
	return http.Header{"Cookie": {res.Cookies()[0].String()}}
}

// member is a signed-in Go client following topics with a Follower.
type member struct {
	peer  *jsonrpc.Peer
	f     *topic.Follower
	notes chan Note
}

func join(t *testing.T, ctx context.Context, srv *httptest.Server, name string) *member {
	m := &member{notes: make(chan Note, 16)}
	m.f = &topic.Follower{OnMessage: func(msg topic.Message) {
		var n Note
		if err := json.Unmarshal(msg.Data, &n); err == nil {
			m.notes <- n
		}
	}}
	mux := jsonrpc.NewMux()
	m.f.Register(mux)
	p, err := ws.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/rpc", ws.DialOptions{
		HTTPHeader: signIn(t, srv, name),
		Peer:       jsonrpc.Options{Handler: mux},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	m.peer = p
	return m
}

func (m *member) next(t *testing.T) Note {
	select {
	case n := <-m.notes:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no note within 10 s")
		return Note{}
	}
}

// TestChatRoomAndPrivateTopic: a signed-in user's post reaches the room
// signed with their name, and a user who arrives later gets it as the
// room's backlog with the first subscription; a private note reaches its
// user only; another user's private topic is refused.
func TestChatRoomAndPrivateTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := serve(t)
	alice, bob := join(t, ctx, srv, "alice"), join(t, ctx, srv, "bob")
	for _, m := range []*member{alice, bob} {
		if err := m.f.Subscribe(ctx, m.peer, "room"); err != nil {
			t.Fatal(err)
		}
	}
	if err := bob.f.Subscribe(ctx, bob.peer, "user:bob"); err != nil {
		t.Fatal(err)
	}
	var sent Note
	if err := alice.peer.Call(ctx, "chat.post", PostParams{Text: "hi"}, &sent); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*member{alice, bob} {
		if n := m.next(t); n != sent || n.From != "alice" {
			t.Fatalf("room note %+v, sent %+v", n, sent)
		}
	}
	// carol arrives later and gets the room's backlog with her first
	// subscription, before anything live.
	carol := join(t, ctx, srv, "carol")
	carol.f.History = 50
	if err := carol.f.Subscribe(ctx, carol.peer, "room"); err != nil {
		t.Fatal(err)
	}
	if n := carol.next(t); n != sent {
		t.Fatalf("carol's backlog %+v, want %+v", n, sent)
	}
	if err := alice.peer.Call(ctx, "chat.dm", DMParams{To: "bob", Text: "psst"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := bob.next(t); n.From != "alice" || n.Text != "psst" {
		t.Fatalf("private note %+v", n)
	}
	err := alice.f.Subscribe(ctx, alice.peer, "user:bob")
	if e := (*jsonrpc.Error)(nil); !errors.As(err, &e) || e.Code != topic.CodeNoSuchTopic {
		t.Fatalf("alice subscribing to bob's topic: %v, want code %d", err, topic.CodeNoSuchTopic)
	}
	select {
	case n := <-alice.notes:
		t.Fatalf("alice got %+v", n)
	default:
	}
}

// TestChatNeedsSignIn: the WebSocket endpoint refuses a connection without
// a session with 401, which ws.Dial returns as a *ws.StatusError.
func TestChatNeedsSignIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := serve(t)
	_, err := ws.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/rpc")
	if se := (*ws.StatusError)(nil); !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Fatalf("dial without a session: %v", err)
	}
}

// TestChatServesPage: the page and jsonrpc.js are served.
func TestChatServesPage(t *testing.T) {
	srv := serve(t)
	for path, want := range map[string]string{"/": "jsonrpc.js", "/js/jsonrpc.js": "export class Client"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s, body without %q", path, res.Status, want)
		}
	}
}
