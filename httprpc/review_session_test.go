package httprpc

// The findings of an independent review of the SessionServer after issue
// 29 (an attacker's and a newcomer's), each pinned by a test that failed
// before its fix.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// liveHeap returns the heap live after a collection, as the runtime counts
// it.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestSessionAcceptMostSpecific pins the review's finding 14: in HTTP the
// most specific media range decides (RFC 9110), so
// "application/json;q=0, */*" refuses JSON (and takes an event stream by
// the wildcard) and "*/*, text/event-stream;q=0" refuses an event stream.
// The SessionServer answered each with the type refused (2 of 2).
func TestSessionAcceptMostSpecific(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	sid := startSession(t, ts)
	var wrong []string
	resp, body := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":7,"method":"echo","params":[1]}`,
		"Content-Type: application/json", "Accept: application/json;q=0, */*", SessionIDHeader+": "+sid)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" || !strings.Contains(body, `"result":[1]`) {
		wrong = append(wrong, "POST Accept \"application/json;q=0, */*\": "+resp.Status+" "+ct+", want an event stream")
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.url, nil)
	req.Header.Set("Accept", "*/*, text/event-stream;q=0")
	req.Header.Set(SessionIDHeader, sid)
	gresp, err := ts.hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if gresp.StatusCode != http.StatusNotAcceptable {
		wrong = append(wrong, "GET Accept \"*/*, text/event-stream;q=0\": "+gresp.Status+" "+gresp.Header.Get("Content-Type")+", want 406")
	}
	cancel()
	gresp.Body.Close()
	for _, w := range wrong {
		t.Error(w)
	}
	for accept, want := range map[string][2]float64{ // JSON, event stream
		"application/json, text/event-stream": {1, 1},
		"text/event-stream;q=0.5, */*;q=0.1":  {0.1, 0.5},
		"application/*;q=0, application/json": {1, 0},
		"text/*, application/json;q=0":        {0, 1},
		"TEXT/EVENT-STREAM;Q=0, */*":          {1, 0},
	} {
		r := &http.Request{Header: http.Header{"Accept": {accept}}}
		j, _ := acceptQ(r, "application/json")
		e, _ := acceptQ(r, "text/event-stream")
		if j != want[0] || e != want[1] {
			t.Errorf("Accept %q: JSON %v, event stream %v; want %v", accept, j, e, want)
		}
	}
}

// TestSessionCancelledJSONCallAnswered pins the review's finding 15: a
// POST accepting only JSON whose call the client cancels (MCP's dialect:
// no reply comes) was never answered: its response waited until the
// client gave up (2 s here), holding the session busy meanwhile. Now it is
// answered 202 Accepted, with no body, once the cancel is read.
func TestSessionCancelledJSONCallAnswered(t *testing.T) {
	m := testMux()
	started := make(chan struct{}, 1)
	m.HandleFunc("hold", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: m, Cancel: jsonrpc.MCPCancel}})
	sid := startSession(t, ts)
	const patience = 4 * wait
	done := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"hold"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set(SessionIDHeader, sid)
		resp, err := ts.hs.Client().Do(req)
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- fmt.Sprintf("%s %q %v", resp.Status, b, err)
	}()
	within(t, started, "the call's handler")
	start := time.Now()
	resp, _ := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`,
		"Content-Type: application/json", "Accept: application/json", SessionIDHeader+": "+sid)
	if resp.StatusCode != 202 {
		t.Fatalf("the cancel: %s", resp.Status)
	}
	var got string
	select {
	case got = <-done:
	case <-time.After(patience):
		t.Fatal("the cancelled call's POST was not answered")
	}
	t.Logf("the cancelled call's JSON POST: %s, %v after the cancel", got, time.Since(start).Round(time.Millisecond))
	if got != `202 Accepted "" <nil>` {
		t.Fatalf("the JSON POST of a cancelled call: %s, want 202 with no body", got)
	}
	ts.mu.Lock()
	ss := ts.sessions[sid]
	ts.mu.Unlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.byRead) != 0 || len(ss.streams) != 1 {
		t.Fatalf("after the cancel: %d streams awaiting a reply, %d kept, want 0 and the standalone one", len(ss.byRead), len(ss.streams))
	}
}

// lanListener reports a LAN address as each connection's local address:
// what a server listening on ":8931" (all interfaces) sees of a connection
// made to the machine's LAN address, here made over loopback.
type lanListener struct{ net.Listener }

func (l lanListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return lanConn{c}, nil
}

type lanConn struct{ net.Conn }

func (lanConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 8931} }

// TestSessionRefusesReboundLANHost pins the review's finding 2: a page
// whose name an attacker rebinds to the machine's LAN address (a server
// listening on all interfaces, as mcptool -http :8931 does, is reached
// there) sends its own name as Host and Origin, and the SessionServer's
// defaults started a session for it (200). Now a server reached at an
// address other than loopback answers, by default, to IP literals and
// localhost names only: a name must be listed in AllowedHosts.
func TestSessionRefusesReboundLANHost(t *testing.T) {
	lan := func(hs *httptest.Server) { hs.Listener = lanListener{hs.Listener} }
	ts := startSessionsWith(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}}, lan)
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"rebind.attacker.example:8931", "http://rebind.attacker.example:8931", 403},
		{"rebind.attacker.example:8931", "", 403},
		{"192.168.1.5:8931", "http://192.168.1.5:8931", 200},
		{"localhost:8931", "", 200},
	} {
		resp, body := postAs(t, ts.hs.Client(), ts.url, tc.host, tc.origin, initialize)
		t.Logf("Host %s, Origin %q on a server reached at its LAN address: %s %.100q", tc.host, tc.origin, resp.Status, body)
		if resp.StatusCode != tc.want {
			t.Errorf("Host %s, Origin %q: %s, want %d", tc.host, tc.origin, resp.Status, tc.want)
		}
	}
	listed := startSessionsWith(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, AllowedHosts: []string{"mybox.lan"}}, lan)
	if resp, _ := postAs(t, listed.hs.Client(), listed.url, "mybox.lan:8931", "http://mybox.lan:8931", initialize); resp.StatusCode != 200 {
		t.Errorf("a name listed in AllowedHosts: %s, want 200", resp.Status)
	}
}

// TestSessionLocalClientsNotLockedOut pins the review's finding 4:
// MaxSessionsPerClient, which tells clients apart by IP address without
// Identity, is one bucket for every client on loopback, and one
// notification after initialize made a session used (IdleTimeout, 10 min,
// instead of UnusedTimeout): one local client that started 100 sessions
// and sent one notification on each held them all (100 alive after 5
// UnusedTimeouts), and another local client got 429. Now a notification
// is no use, so they expire; and even before, a newer session of the same
// address ends the oldest unused one instead of being refused
// (TestSessionPerClientEvictsUnused).
func TestSessionLocalClientsNotLockedOut(t *testing.T) {
	ts := startSessions(t, &SessionServer{
		Peer:          jsonrpc.Options{Handler: testMux()},
		StartMethods:  DefaultStartMethods,
		UnusedTimeout: 200 * time.Millisecond,
	})
	hog := &http.Client{Transport: &http.Transport{}}
	defer hog.CloseIdleConnections()
	post := func(hc *http.Client, sid, body string) *http.Response {
		req, _ := http.NewRequestWithContext(testCtx(t, wait), http.MethodPost, ts.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if sid != "" {
			req.Header.Set(SessionIDHeader, sid)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := range DefaultMaxSessionsPerClient {
		resp := post(hog, "", initialize)
		sid := resp.Header.Get(SessionIDHeader)
		if resp.StatusCode != 200 || sid == "" {
			t.Fatalf("session %d: %s", i, resp.Status)
		}
		if resp := post(hog, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != 202 {
			t.Fatalf("notification %d: %s", i, resp.Status)
		}
	}
	for end := time.Now().Add(wait); ts.Sessions() > 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	victim := &http.Client{Transport: &http.Transport{}}
	defer victim.CloseIdleConnections()
	resp := post(victim, "", initialize)
	t.Logf("one client's sessions alive after their UnusedTimeout: %d; another client's initialize: %s", ts.Sessions(), resp.Status)
	if resp.StatusCode != 200 {
		t.Fatalf("another local client, after one client started %d sessions: %s", DefaultMaxSessionsPerClient, resp.Status)
	}
}

// TestSessionPerClientEvictsUnused pins the rest of finding 4: past
// MaxSessionsPerClient, a client's newer session ends its oldest one that
// is not used and has nothing going on, rather than be refused; a session
// with a call made, or a stream open, is never ended so; 429 only when
// every session of the client is in use.
func TestSessionPerClientEvictsUnused(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, StartMethods: DefaultStartMethods, MaxSessionsPerClient: 3})
	start := func() (string, int) {
		resp, _ := rawRequest(t, ts, "POST", initialize, "Content-Type: application/json", "Accept: application/json")
		return resp.Header.Get(SessionIDHeader), resp.StatusCode
	}
	call := func(sid string) int {
		resp, _ := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":2,"method":"echo"}`, "Content-Type: application/json", "Accept: application/json", SessionIDHeader+": "+sid)
		return resp.StatusCode
	}
	used, _ := start()
	if call(used) != 200 {
		t.Fatal("a call")
	}
	listening, _ := start() // unused, but its GET stream is open
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(SessionIDHeader, listening)
	gresp, err := ts.hs.Client().Do(req)
	if err != nil || gresp.StatusCode != 200 {
		t.Fatalf("GET: %v", err)
	}
	defer gresp.Body.Close()
	unused, _ := start()
	newer, code := start()
	if code != 200 {
		t.Fatalf("a fourth session of one client, with one unused: %d, want 200", code)
	}
	if call(unused) != 404 || call(used) != 200 || call(newer) != 200 {
		t.Fatal("the oldest unused session must have made room, and only it")
	}
	if _, code := start(); code != 429 {
		t.Fatalf("a fourth session of one client whose sessions are all in use: %d, want 429", code)
	}
	cancel()
	gresp.Body.Close()
	if code := call(listening); code != 200 {
		t.Fatalf("the listening session: %d, want 200 (never ended while its stream was open)", code)
	}
}
