package httprpc

// The findings of an independent review of the SessionServer after issue
// 29 (an attacker's and a newcomer's), each pinned by a test that failed
// before its fix.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
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

// TestSessionNoGETClientKeepsSession pins the review's finding 11: a
// client that never opens the GET stream (the transport makes it
// optional) lost its session once the server had pushed MaxBufferedBytes
// of notifications outside any call, although it read every stream it
// opened (after 62 pushes of 1 KB with a budget of 64 KiB, its next call
// got 404). Now those pushes are dropped past a quarter of the budget, and
// the session lives.
func TestSessionNoGETClientKeepsSession(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, MaxBufferedBytes: 64 << 10})
	sid := startSession(t, ts)
	p := ts.nextPeer(t)
	note := strings.Repeat("n", 1000)
	pushed, calls := 0, 0
	var callErr string
	for i := range 200 {
		if err := p.Notify(testCtx(t, wait), "log", []string{note}); err != nil {
			break
		}
		pushed++
		if i%10 == 9 { // the client is busy with calls meanwhile, and reads them whole
			resp, body := rawRequest(t, ts, "POST", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":[%d]}`, 100+i, i),
				"Content-Type: application/json", "Accept: application/json, text/event-stream", SessionIDHeader+": "+sid)
			if resp.StatusCode != 200 {
				callErr = resp.Status + " " + body
				break
			}
			calls++
		}
	}
	t.Logf("pushed %d notifications of 1 KB, %d calls answered meanwhile; sessions: %d", pushed, calls, ts.Sessions())
	if callErr != "" || pushed != 200 || ts.Sessions() != 1 {
		t.Fatalf("a client reading every stream it opened lost its session after %d pushes (%d calls): %s", pushed, calls, callErr)
	}
}

// orphanCalls posts n calls of method gate to session sid, accepting an
// event stream, and drops each response once its headers are in, as a
// client that goes away before the reply; it returns once the server has
// seen every client go.
func orphanCalls(t *testing.T, ts *sessionServer, sid string, first, n int) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer hc.CloseIdleConnections()
	var next atomic.Int64
	next.Store(int64(first))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(first+n); i = next.Add(1) {
				ctx, cancel := context.WithCancel(context.Background())
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url, strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"gate"}`, i)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set(SessionIDHeader, sid)
				resp, err := hc.Do(req)
				if err == nil {
					resp.Body.Close() // after the headers: the client goes
				} else {
					t.Error(err)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	ss := ts.session(sid)
	for end := time.Now().Add(3 * wait); ; time.Sleep(10 * time.Millisecond) {
		ss.mu.Lock()
		writers := 0
		for _, st := range ss.streams {
			if st.writer != nil {
				writers++
			}
		}
		ss.mu.Unlock()
		if writers == 0 {
			return
		} else if time.Now().After(end) {
			t.Fatalf("%d streams still written", writers)
		}
	}
}

// session returns the session sid names.
func (ts *sessionServer) session(sid string) *session {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.sessions[sid]
}

// repliesIn waits until no stream of ss awaits a reply.
func repliesIn(t *testing.T, ss *session) {
	t.Helper()
	for end := time.Now().Add(3 * wait); ; time.Sleep(10 * time.Millisecond) {
		ss.mu.Lock()
		n := len(ss.byRead)
		ss.mu.Unlock()
		if n == 0 {
			return
		} else if time.Now().After(end) {
			t.Fatalf("%d replies not in", n)
		}
	}
}

// unsentKept counts ss's streams whose reply is in but not sent, and what
// ss counts against its budget.
func unsentKept(ss *session) (unsent, counted int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for num, st := range ss.streams {
		if num != 0 && st.ended && st.sent < st.last {
			unsent++
		}
	}
	return unsent, ss.bytes
}

// TestSessionOrphanStreamsBounded pins the review's finding 5: a stream
// whose client left before its reply was kept for the session's life,
// without a cap, counted at its reply's length (38 B) while it held 369
// B: 4,000 of them after two rounds of 2,000, 9.7 times what was counted
// (at the 1 MiB budget, some 27,600 such streams, 10 MiB of heap, per
// session). Now such a stream is kept for a resumption as an ended stream
// is, among the last maxDoneStreams of its session, and each is counted
// at what it holds (streamOverhead, and each event at its length plus
// eventOverhead): measured over 40 sessions, the heap they hold is within
// what is counted.
func TestSessionOrphanStreamsBounded(t *testing.T) {
	var gate atomic.Value
	m := testMux()
	m.HandleFunc("gate", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		select {
		case <-gate.Load().(chan struct{}):
		case <-ctx.Done():
		}
		return 1, nil
	})
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: m, MaxConcurrent: -1}})
	round := func(sids []string, first, n int) {
		g := make(chan struct{})
		gate.Store(g)
		var open sync.Once
		defer open.Do(func() { close(g) }) // on a failure too
		for _, sid := range sids {
			orphanCalls(t, ts, sid, first, n)
		}
		open.Do(func() { close(g) })
		for _, sid := range sids {
			repliesIn(t, ts.session(sid))
		}
	}

	sid := startSession(t, ts)
	ss := ts.session(sid)
	round([]string{sid}, 0, 2000)
	u1, c1 := unsentKept(ss)
	before := liveHeap()
	round([]string{sid}, 2000, 2000)
	after := liveHeap()
	u2, c2 := unsentKept(ss)
	t.Logf("one session, streams whose client left before the reply: %d kept after 2,000, %d after 4,000; counted %d then %d bytes; the second 2,000 grew the heap %+d bytes",
		u1, u2, c1, c2, int64(after)-int64(before))
	if u2 > maxDoneStreams || int64(after)-int64(before) > int64(2*c2+256<<10) {
		t.Fatalf("%d streams kept (at most %d wanted), heap %+d bytes for %d counted", u2, maxDoneStreams, int64(after)-int64(before), c2)
	}

	const sessions = 40
	var sids []string
	for range sessions {
		sids = append(sids, startSession(t, ts))
	}
	counted := func() (n int) {
		for _, sid := range sids {
			_, c := unsentKept(ts.session(sid))
			n += c
		}
		return n
	}
	round(sids, 0, maxDoneStreams)
	// What the kept streams hold: the heap they free when forgotten (the
	// maps that grew for 64 calls at once stay grown either way).
	kept, held, before := 0, counted(), liveHeap()
	for _, sid := range sids {
		ss := ts.session(sid)
		ss.mu.Lock()
		kept += len(ss.done)
		for len(ss.done) > 0 {
			ss.forget(ss.done[0])
		}
		ss.mu.Unlock()
	}
	freed, uncounted := int64(before)-int64(liveHeap()), int64(held-counted())
	t.Logf("%d streams kept whose client left before the reply (%d sessions) held %d bytes of heap (%d each), counted %d (%d each)",
		kept, sessions, freed, freed/int64(kept), uncounted, uncounted/int64(kept))
	if kept != sessions*maxDoneStreams || freed > uncounted+uncounted/4 {
		t.Fatalf("%d streams kept held %d bytes of heap, %d counted", kept, freed, uncounted)
	}
}

// records is a slog.Handler that keeps the records of level Info and
// above.
type records struct {
	mu   sync.Mutex
	msgs []string
}

func (h *records) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	h.msgs = append(h.msgs, msg)
	return nil
}
func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *records) WithGroup(string) slog.Handler      { return h }

// TestSessionDeleteIsCleanEnd pins a newcomer's finding: a client's
// DELETE, the normal end of a session, was logged as "connection ended
// cause=read failed: httprpc: session deleted by the client" at Info, and
// OnDisconnect and the Peer's Wait got that error. Now it is a clean end,
// as Close is: the handlers' contexts are cancelled, Wait and
// OnDisconnect's cause are nil, and nothing is logged at Info or above.
func TestSessionDeleteIsCleanEnd(t *testing.T) {
	logs := &records{}
	m := testMux()
	started := make(chan struct{}, 1)
	m.HandleFunc("hold", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: m, Logger: slog.New(logs)}})
	sid := startSession(t, ts)
	server := ts.nextPeer(t)
	held := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(testCtx(t, wait), http.MethodPost, ts.url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"hold"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(SessionIDHeader, sid)
		resp, err := ts.hs.Client().Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		held <- err
	}()
	within(t, started, "the held call")
	if resp, _ := rawRequest(t, ts, "DELETE", "", SessionIDHeader+": "+sid); resp.StatusCode != 204 {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	cause := ts.nextEnd(t)
	werr := waitErr(t, "the server Peer", server)
	within(t, held, "the held call's stream to end")
	logs.mu.Lock()
	defer logs.mu.Unlock()
	t.Logf("after DELETE: OnDisconnect's cause %v, Wait %v, logged %q", cause, werr, logs.msgs)
	if cause != nil || werr != nil || len(logs.msgs) > 0 {
		t.Fatalf("DELETE, a clean end: cause %v, Wait %v, logged %q; want nil, nil and nothing", cause, werr, logs.msgs)
	}
}

// TestSessionCORSWithAuth pins a newcomer's finding on CORS with
// authentication in front of the SessionServer: a browser's preflight
// carries no Authorization header, so middleware that refuses it breaks
// every page, and a refusal (401) without the CORS headers cannot be read
// by the page. With SessionServer.CORS, such middleware answers the
// preflights of the allowed origins and marks its own refusals for them;
// Identity binds the session to the user the middleware signed in.
func TestSessionCORSWithAuth(t *testing.T) {
	type userKey struct{}
	srv := &SessionServer{
		Peer:           jsonrpc.Options{Handler: testMux()},
		OriginPatterns: []string{"app.example.com"},
		Identity: func(r *http.Request) (string, error) {
			user, _ := r.Context().Value(userKey{}).(string)
			return user, nil
		},
	}
	ts := startSessionsWith(t, srv, func(hs *httptest.Server) {
		hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if srv.CORS(w, r) {
				return // a preflight, answered
			}
			user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok {
				http.Error(w, "sign in first", http.StatusUnauthorized)
				return
			}
			srv.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
		})
	})
	do := func(method, origin, auth string) *http.Response {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(initialize)
		}
		req, _ := http.NewRequestWithContext(testCtx(t, wait), method, ts.url, body)
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := ts.hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	const app = "https://app.example.com"
	for _, tc := range []struct {
		method, origin, auth string
		status               int
		allowOrigin          string
	}{
		{http.MethodOptions, app, "", 204, app},
		{http.MethodPost, app, "", 401, app},
		{http.MethodPost, app, "Bearer ada", 200, app},
		{http.MethodOptions, "https://evil.example", "", 401, ""},
		{http.MethodPost, "https://evil.example", "", 401, ""},
		{http.MethodPost, "https://evil.example", "Bearer ada", 403, ""},
	} {
		resp := do(tc.method, tc.origin, tc.auth)
		h := resp.Header
		if resp.StatusCode != tc.status || h.Get("Access-Control-Allow-Origin") != tc.allowOrigin || len(h.Values("Vary")) > 1 {
			t.Errorf("%s from %s (%q): %s, Access-Control-Allow-Origin %q, Vary %q; want %d and %q",
				tc.method, tc.origin, tc.auth, resp.Status, h.Get("Access-Control-Allow-Origin"), h.Values("Vary"), tc.status, tc.allowOrigin)
		}
		if tc.method == http.MethodOptions && tc.status == 204 && !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Errorf("the preflight's Access-Control-Allow-Headers %q lacks Authorization", h.Get("Access-Control-Allow-Headers"))
		}
		if tc.status == 200 && h.Get("Access-Control-Expose-Headers") != SessionIDHeader {
			t.Errorf("the page cannot read the session id: Access-Control-Expose-Headers %q", h.Get("Access-Control-Expose-Headers"))
		}
	}
}
