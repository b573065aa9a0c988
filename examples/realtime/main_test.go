package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind, but
// for two of the embedded nats-server's: a JetStream stream's file store
// (its state flush loop, and the access-time ticker every file store
// holds) that the server, very rarely, leaves open after WaitForShutdown
// when the stream was being created as it shut down (seen twice in some
// thirty runs of this package since the board's topic history went to
// JetStream; every goroutine of ours is still checked).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop"),
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server/ats.Register.func1"),
	)
}

// startServer serves the demo on a free loopback port until the test ends
// and returns its base URL, http://127.0.0.1:PORT/.
func startServer(t *testing.T) string {
	t.Helper()
	ln, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	nc, closeNATS, err := connectNATS(natsConfig{}, log) // the default: in process, no port
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() { done <- serve(ctx, ln, nc, natsConfig{}.board(), log, func() { close(ready) }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		closeNATS()
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	return pageURL(ln.Addr())
}

// login signs in at /login as name, as the page does first, and returns an
// HTTP client whose cookie jar holds the session.
func login(t *testing.T, base, name string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar}
	body, _ := json.Marshal(map[string]string{"name": name})
	resp, err := c.Post(base+"login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("login as %q: %s %s", name, resp.Status, msg)
	}
	return c
}

// page is a Go stand-in for a browser page: a Peer dialled to /rpc with a
// session, that answers page.confirm (yes, unless it is told otherwise)
// and records the notifications the server pushes.
type page struct {
	*jsonrpc.Peer
	posted  chan Note
	liked   chan Note
	cleared chan string
	stats   chan Stats
	topic   chan topic.Message // topic.message notifications
	nudged  chan string        // who page.nudge said nudged this page's user
	version int64              // of the last stats statsUntil read

	mu      sync.Mutex
	confirm bool     // the answer to page.confirm
	asked   []string // the questions page.confirm was asked
}

// dialPage signs in as user and connects a page with that session. The
// page also serves page.name, answering claim: the server must not care.
func dialPage(t *testing.T, base, user, claim string) *page {
	t.Helper()
	client := login(t, base, user)
	pg := &page{
		posted:  make(chan Note, 100),
		liked:   make(chan Note, 100),
		cleared: make(chan string, 100),
		stats:   make(chan Stats, 100),
		topic:   make(chan topic.Message, 1000),
		nudged:  make(chan string, 100),
		confirm: true,
	}
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "page.name", func(context.Context, any) (string, error) { return claim, nil })
	jsonrpc.Register(mux, "page.confirm", func(_ context.Context, p struct{ Question string }) (bool, error) {
		pg.mu.Lock()
		defer pg.mu.Unlock()
		pg.asked = append(pg.asked, p.Question)
		return pg.confirm, nil
	})
	jsonrpc.Register(mux, "page.nudge", func(_ context.Context, n Nudge) (bool, error) { pg.nudged <- n.From; return true, nil })
	notify := func(method string, ch chan Note) {
		jsonrpc.Register(mux, method, func(_ context.Context, n Note) (any, error) { ch <- n; return nil, nil })
	}
	notify("board.posted", pg.posted)
	notify("board.liked", pg.liked)
	jsonrpc.Register(mux, "board.cleared", func(_ context.Context, p struct{ By string }) (any, error) {
		pg.cleared <- p.By
		return nil, nil
	})
	jsonrpc.Register(mux, "board.stats", func(_ context.Context, s Stats) (any, error) { pg.stats <- s; return nil, nil })
	jsonrpc.RegisterNotification(mux, topic.MethodMessage, func(_ context.Context, m topic.Message) error { pg.topic <- m; return nil })

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	p, err := ws.Dial(ctx, wsURL(base), ws.DialOptions{
		Peer:       jsonrpc.Options{Handler: mux},
		HTTPClient: client, // its jar sends the session cookie with the upgrade
	})
	if err != nil {
		t.Fatal(err)
	}
	pg.Peer = p
	t.Cleanup(func() { p.Close(); p.Wait() })
	return pg
}

// wsURL is the URL of /rpc on the server at base.
func wsURL(base string) string { return "ws" + strings.TrimPrefix(base, "http") + "rpc" }

// setConfirm sets the page's answer to page.confirm and returns the
// questions asked so far.
func (pg *page) setConfirm(yes bool) []string {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	pg.confirm = yes
	return pg.asked
}

// next waits for the next value on ch.
func next[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// statsUntil reads pushed stats until ok accepts one, checking that their
// versions grow.
func statsUntil(t *testing.T, pg *page, ok func(Stats) bool) Stats {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case s := <-pg.stats:
			if s.Version <= pg.version {
				t.Fatalf("pushed stats version %d after %d", s.Version, pg.version)
			}
			pg.version = s.Version
			if ok(s) {
				return s
			}
		case <-deadline:
			t.Fatal("timed out waiting for the expected board.stats notification")
		}
	}
}

func TestBoard(t *testing.T) {
	base := startServer(t)
	ctx := t.Context()
	alice := dialPage(t, base, "  alice  ", "alice")
	bob := dialPage(t, base, "bob", "bob")
	statsUntil(t, alice, func(s Stats) bool { return s.Online == 2 }) // pushed by the Group on join

	t.Run("post", func(t *testing.T) {
		var note Note
		if err := alice.Call(ctx, "board.post", map[string]string{"text": " hello board "}, &note); err != nil {
			t.Fatal(err)
		}
		// Signed by alice's session (her name as login cleaned it).
		if note.ID == 0 || note.Text != "hello board" || note.Author != "alice" {
			t.Fatalf("posted note = %+v", note)
		}
		if got := next(t, bob.posted, "board.posted on bob"); !reflect.DeepEqual(got, note) {
			t.Fatalf("bob was told %+v, want %+v", got, note)
		}
		// The board's audience is a cluster Topic, which reaches every
		// page, the poster's too (pages render notes by id, so twice is
		// the same), followed by the stats.
		if got := next(t, alice.posted, "board.posted on alice"); !reflect.DeepEqual(got, note) {
			t.Fatalf("alice was told %+v, want %+v", got, note)
		}
		statsUntil(t, alice, func(s Stats) bool { return s.Posted == 1 })
	})

	t.Run("text errors", func(t *testing.T) {
		for _, text := range []string{"", "   ", strings.Repeat("x", 141)} {
			err := bob.Call(ctx, "board.post", map[string]string{"text": text}, nil)
			var e *jsonrpc.Error
			if !errors.As(err, &e) || e.Code != -32010 || e.Message != "note text must be 1..140 characters" {
				t.Errorf("post %q: err = %v, want code -32010", text, err)
			}
		}
		var note Note // 140 runes of two bytes each is fine
		if err := bob.Call(ctx, "board.post", map[string]string{"text": strings.Repeat("é", 140)}, &note); err != nil {
			t.Fatal(err)
		}
		if note.Author != "bob" {
			t.Fatalf("author = %q, want bob", note.Author)
		}
		for _, pg := range []*page{alice, bob} {
			if got := next(t, pg.posted, "board.posted"); !reflect.DeepEqual(got, note) {
				t.Fatalf("told %+v, want %+v", got, note)
			}
		}
	})

	t.Run("a third page", func(t *testing.T) {
		carol := dialPage(t, base, "carol", "")
		var note Note
		if err := carol.Call(ctx, "board.post", map[string]int{"text": 5}, nil); !errors.Is(err, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}) {
			t.Fatalf("post with a number for text: %v, want Invalid params", err)
		}
		if err := carol.Call(ctx, "board.post", map[string]string{"text": "who am I"}, &note); err != nil {
			t.Fatal(err)
		}
		if note.Author != "carol" {
			t.Fatalf("author = %q, want carol", note.Author)
		}
		for _, pg := range []*page{alice, bob} {
			if got := next(t, pg.posted, "board.posted"); !reflect.DeepEqual(got, note) {
				t.Fatalf("told %+v, want %+v", got, note)
			}
		}
		carol.Close()
		statsUntil(t, alice, func(s Stats) bool { return s.Online == 2 && s.Posted == 3 })
	})

	t.Run("batch", func(t *testing.T) {
		var notes []Note
		var stats Stats
		batch := []jsonrpc.BatchElem{
			{Method: "board.list", Result: &notes},
			{Method: "board.stats", Result: &stats},
			{Method: "board.like", Params: map[string]int{"id": 999}},
		}
		if err := bob.Batch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if batch[0].Error != nil || batch[1].Error != nil {
			t.Fatal(batch[0].Error, batch[1].Error)
		}
		if len(notes) != 3 || notes[0].Text != "hello board" || notes[2].Author != "carol" {
			t.Fatalf("board.list = %+v", notes)
		}
		if want := (Stats{Notes: 3, Posted: 3, Online: 2, Version: stats.Version}); stats != want || stats.Version == 0 {
			t.Fatalf("board.stats = %+v, want %+v", stats, want)
		}
		if !errors.Is(batch[2].Error, &jsonrpc.Error{Code: CodeNoSuchID}) {
			t.Fatalf("like of an unknown note: %v", batch[2].Error)
		}
	})

	t.Run("like", func(t *testing.T) {
		var liked Note
		if err := bob.Call(ctx, "board.like", map[string]int{"id": 1}, &liked); err != nil {
			t.Fatal(err)
		}
		if liked.ID != 1 || liked.Likes != 1 {
			t.Fatalf("liked = %+v", liked)
		}
		if got := next(t, alice.liked, "board.liked on alice"); !reflect.DeepEqual(got, liked) {
			t.Fatalf("alice was told %+v, want %+v", got, liked)
		}
	})

	// A like is once per person: liking again, or taking back a like not
	// given, changes nothing and is announced to nobody (alice's next
	// board.liked is the change after it).
	t.Run("like once per person", func(t *testing.T) {
		like := func(pg *page, unlike bool) Note {
			t.Helper()
			var n Note
			if err := pg.Call(ctx, "board.like", map[string]any{"id": 1, "unlike": unlike}, &n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := like(bob, false); n.Likes != 1 || !slices.Equal(n.LikedBy, []string{"bob"}) {
			t.Fatalf("bob's second like: %+v, want still 1 like, by bob", n)
		}
		if n := like(bob, true); n.Likes != 0 || len(n.LikedBy) != 0 {
			t.Fatalf("bob's unlike: %+v, want 0 likes", n)
		}
		if got := next(t, alice.liked, "bob's unlike"); got.Likes != 0 {
			t.Fatalf("alice was told %+v after bob's second like and his unlike, want the unlike (0 likes)", got)
		}
		like(bob, true)
		if n := like(alice, false); n.Likes != 1 || !slices.Equal(n.LikedBy, []string{"alice"}) {
			t.Fatalf("alice's like: %+v, want 1 like, by alice", n)
		}
		if got := next(t, alice.liked, "alice's like"); got.Likes != 1 || !slices.Equal(got.LikedBy, []string{"alice"}) {
			t.Fatalf("alice was told %+v after bob's second unlike and her like, want her like", got)
		}
	})

	t.Run("clear refused by the page", func(t *testing.T) {
		bob.setConfirm(false)
		err := bob.Call(ctx, "board.clear", nil, nil)
		if !errors.Is(err, &jsonrpc.Error{Code: CodeNotConfirmed}) {
			t.Fatalf("board.clear refused: %v, want code %d", err, CodeNotConfirmed)
		}
		// The server asked bob's page, with the count only it knows.
		asked := bob.setConfirm(true)
		if len(asked) != 1 || !strings.Contains(asked[0], "all 3 notes") {
			t.Fatalf("page.confirm asked %q, want one question about all 3 notes", asked)
		}
		var notes []Note
		if err := alice.Call(ctx, "board.list", nil, &notes); err != nil || len(notes) != 3 {
			t.Fatalf("board.list after a refused clear: %d notes, %v; want 3", len(notes), err)
		}
	})

	t.Run("clear", func(t *testing.T) {
		var res struct{ Cleared int }
		if err := bob.Call(ctx, "board.clear", nil, &res); err != nil {
			t.Fatal(err)
		}
		if res.Cleared != 3 {
			t.Fatalf("cleared %d notes, want 3", res.Cleared)
		}
		if by := next(t, alice.cleared, "board.cleared on alice"); by != "bob" {
			t.Fatalf("cleared by %q, want bob", by)
		}
		statsUntil(t, alice, func(s Stats) bool { return s.Notes == 0 && s.Posted == 3 })
	})

	t.Run("leave", func(t *testing.T) {
		bob.Close()
		statsUntil(t, alice, func(s Stats) bool { return s.Online == 1 })
	})
}

// TestNoteSignedBySession checks that a note is signed by the user the
// connection was authenticated as (the ctx of the handler carries it from
// the upgrade request), whatever the page claims: in page.name, or in the
// params of board.post.
func TestNoteSignedBySession(t *testing.T) {
	base := startServer(t)
	ctx := t.Context()
	alice := dialPage(t, base, "alice", "mallory")
	bob := dialPage(t, base, "bob", "bob")
	statsUntil(t, bob, func(s Stats) bool { return s.Online == 2 }) // bob has joined
	var note Note
	params := map[string]string{"text": "signed?", "author": "mallory", "name": "mallory", "user": "mallory"}
	if err := alice.Call(ctx, "board.post", params, &note); err != nil {
		t.Fatal(err)
	}
	if note.Author != "alice" {
		t.Errorf("the note is signed %q, want alice (the session's user)", note.Author)
	}
	if got := next(t, bob.posted, "board.posted on bob"); got.Author != "alice" {
		t.Errorf("bob was told the note is by %q, want alice", got.Author)
	}
}

// TestUpgradeNeedsSession checks that /rpc refuses an upgrade without a
// live session with 401, before any WebSocket exists, and what /login
// accepts.
func TestUpgradeNeedsSession(t *testing.T) {
	base := startServer(t)
	for _, tc := range []struct {
		what   string
		cookie *http.Cookie
	}{
		{"no cookie", nil},
		{"a token the server never gave", &http.Cookie{Name: sessionCookie, Value: "AAAAAAAAAAAAAAAAAAAAAAAAAA"}},
		{"an empty token", &http.Cookie{Name: sessionCookie, Value: ""}},
	} {
		req := upgradeRequest(t, base)
		if tc.cookie != nil {
			req.AddCookie(tc.cookie)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("upgrade with %s: %s, want 401", tc.what, resp.Status)
		}
	}

	// ws.Dial without a session fails, and nothing connects.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if p, err := ws.Dial(ctx, wsURL(base)); err == nil {
		p.Close()
		t.Error("ws.Dial without a session connected")
	} else if !strings.Contains(err.Error(), "401") {
		t.Errorf("ws.Dial without a session: %v, want a 401", err)
	}

	for _, tc := range []struct {
		what, method, ctype, body string
		want                      int
	}{
		{"GET", "GET", "", "", http.StatusMethodNotAllowed},
		{"a form", "POST", "application/x-www-form-urlencoded", "name=alice", http.StatusUnsupportedMediaType},
		{"no name", "POST", "application/json", `{"name":"  "}`, http.StatusBadRequest},
		{"not JSON", "POST", "application/json", `name=alice`, http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(tc.method, base+"login", strings.NewReader(tc.body))
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want || len(resp.Cookies()) != 0 {
			t.Errorf("login with %s: %s and %d cookies, want %d and none", tc.what, resp.Status, len(resp.Cookies()), tc.want)
		}
	}

	// A login sets an HttpOnly, SameSite=Strict cookie.
	resp, err := http.Post(base+"login", "application/json", strings.NewReader(`{"name":"alice"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cs := resp.Cookies()
	if resp.StatusCode != http.StatusOK || len(cs) != 1 || cs[0].Name != sessionCookie || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("login: %s, cookies %v; want 200 and one HttpOnly SameSite=Strict %s", resp.Status, cs, sessionCookie)
	}
}

// upgradeRequest returns a same-origin WebSocket upgrade request for /rpc.
func upgradeRequest(t *testing.T, base string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", base+"rpc", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": strings.TrimSuffix(base, "/")} {
		req.Header.Set(k, v)
	}
	return req
}

// TestStatic checks that the embedded page, and the library's client from
// the package browser, are served next to /rpc.
func TestStatic(t *testing.T) {
	base := startServer(t)
	for path, want := range map[string]string{
		"":              `<script type="module" src="app.js">`,
		"app.js":        `from './js/jsonrpc.js'`,
		"js/jsonrpc.js": "export class Client", // the package browser's, not a copy
		"style.css":     ".note",
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET /%s: %s, body lacks %q", path, resp.Status, want)
		}
		if strings.HasSuffix(path, ".js") && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
			t.Errorf("GET /%s: Content-Type %q; modules need text/javascript", path, resp.Header.Get("Content-Type"))
		}
	}
	// A browser on another site may not connect to /rpc, even with a
	// session (were its cookie sent, which SameSite=Strict prevents).
	client := login(t, base, "alice")
	req := upgradeRequest(t, base)
	req.Header.Set("Origin", "http://evil.example")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin upgrade: %s, want 403", resp.Status)
	}
}

// TestListenBusy checks the message a newcomer sees when the port is taken.
func TestListenBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = listen(ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), "-addr") {
		t.Fatalf("listen on a busy port: %v", err)
	}
}

func TestPageURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/",
		"0.0.0.0:80":     "http://localhost:80/",
		"[::1]:9":        "http://[::1]:9/",
	} {
		a, _ := net.ResolveTCPAddr("tcp", addr)
		if got := pageURL(a); got != want {
			t.Errorf("pageURL(%s) = %s, want %s", addr, got, want)
		}
	}
}
