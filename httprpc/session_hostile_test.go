package httprpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peerwire/jsonrpc"
)

// TestSessionUnopenedStreamBounded pins the budget of a session whose
// client has not opened its GET stream (the transport makes it optional):
// what the server sends outside any call is kept for such a GET within a
// quarter of MaxBufferedBytes, the oldest dropped, and never ends the
// session; a GET opened later gets the newest, then the stream goes on
// live. (Before the review's finding 11, the session ended with
// ErrSlowClient once they passed the whole budget.)
func TestSessionUnopenedStreamBounded(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, MaxBufferedBytes: 64 << 10})
	sid := startSession(t, ts)
	p := ts.nextPeer(t)
	ctx := testCtx(t, wait)
	for i := range 1000 {
		if err := p.Notify(ctx, "push", []any{i, strings.Repeat("x", 4096)}); err != nil {
			t.Fatalf("notification %d of 4 KiB for a GET stream nobody opened: %v", i, err)
		}
	}
	ts.mu.Lock()
	ss := ts.sessions[sid]
	ts.mu.Unlock()
	ss.mu.Lock()
	kept, bytes := len(ss.streams[0].events), ss.streams[0].bytes
	ss.mu.Unlock()
	t.Logf("1000 notifications of 4 KiB for a GET stream nobody opened: %d kept, %d bytes (budget 64 KiB)", kept, bytes)
	if bytes > 16<<10 || kept == 0 {
		t.Fatalf("%d events, %d bytes kept for the unopened stream, want some and at most a quarter of 64 KiB", kept, bytes)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(SessionIDHeader, sid)
	resp, err := ts.hs.Client().Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	r := newSSEReader(resp.Body, 1<<20)
	data, _, err := r.next()
	if err != nil || !strings.HasPrefix(string(data), fmt.Sprintf(`{"jsonrpc":"2.0","method":"push","params":[%d,`, 1000-kept)) {
		t.Fatalf("the GET's first event: %.60q %v, want the oldest kept, %d", data, err, 1000-kept)
	}
	if err := p.Notify(ctx, "push", []any{"live"}); err != nil {
		t.Fatal(err)
	}
	for range kept - 1 {
		if _, _, err := r.next(); err != nil {
			t.Fatal(err)
		}
	}
	if data, _, err := r.next(); err != nil || !strings.Contains(string(data), `"live"`) {
		t.Fatalf("after those kept: %.60q %v, want the live one", data, err)
	}
}

// TestSessionSlowClientUnreadStream pins the same for a client that opens
// the GET stream and never reads it: once the connection's buffers are
// full, the events pile up in the session's buffer; at its budget the
// Peer's writes wait while the stream is open (as they would for a client
// that reads), until a write has taken nothing for the stream's write
// timeout (30 s, 1 s here): the response ends, and with no reader left
// the session ends with ErrSlowClient.
func TestSessionSlowClientUnreadStream(t *testing.T) {
	defer func(d time.Duration) { streamWriteTimeout = d }(streamWriteTimeout)
	streamWriteTimeout = time.Second
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, MaxBufferedBytes: 256 << 10})
	sid := startSession(t, ts)
	p := ts.nextPeer(t)
	conn, err := net.Dial("tcp", ts.hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", sid)
	br := bufio.NewReader(conn)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "200") {
		t.Fatalf("GET: %q %v", line, err)
	}
	// Now read nothing more.
	ctx := testCtx(t, 20*time.Second)
	big := []string{strings.Repeat("x", 64<<10)}
	n := 0
	for ; n < 2000 && err == nil; n++ { // 2000 * 64 KiB = 125 MiB: far more than any socket buffer
		err = p.Notify(ctx, "push", big)
	}
	if err == nil {
		t.Fatalf("%d notifications of 64 KiB sent to a stream nobody reads", n)
	}
	if cause := ts.nextEnd(t); !errors.Is(cause, ErrSlowClient) {
		t.Fatalf("the session ended with %v, want ErrSlowClient", cause)
	}
	t.Logf("the session ended after %d notifications of 64 KiB", n)
}

// TestSessionSlowBody pins the bound that the http.Server must set on a
// client that sends a body slowly (the SessionServer reads a POST's body
// to its end before anything else): with ReadTimeout, a stalled body ends
// the request, and no session is started.
func TestSessionSlowBody(t *testing.T) {
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}}
	ts := startSessionsWith(t, srv, func(hs *httptest.Server) {
		hs.Config.ReadTimeout = 200 * time.Millisecond
		hs.Config.ReadHeaderTimeout = 200 * time.Millisecond
	})
	for _, partial := range []string{
		"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
		"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty", // slow headers
	} {
		conn, err := net.Dial("tcp", ts.hs.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, partial)
		conn.SetReadDeadline(time.Now().Add(wait))
		start := time.Now()
		_, err = io.ReadAll(conn) // the server gives up and closes (a reset, if our bytes are unread)
		conn.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || time.Since(start) > 2*time.Second {
			t.Fatalf("a stalled request %.30q: closed after %v (%v), want within ReadTimeout", partial, time.Since(start), err)
		}
	}
	if n := srv.Sessions(); n != 0 {
		t.Fatalf("%d sessions started by stalled requests", n)
	}
}

// TestSessionManyAbandoned pins the memory of abandoned sessions: 10,000
// sessions started and never used again hold a bounded heap each, and
// idle expiry removes them all, giving the memory back. On a fake clock.
func TestSessionManyAbandoned(t *testing.T) {
	const n = 10000
	synctest.Test(t, func(t *testing.T) {
		srv := &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, IdleTimeout: time.Minute, MaxSessionsPerClient: -1}
		before := heap()
		for i := range n {
			w := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}`,
				"Content-Type: application/json", "Accept: application/json")
			if w.Code != 200 {
				t.Fatalf("session %d: %d %s", i, w.Code, w.Body)
			}
		}
		synctest.Wait()
		during := heap()
		per := (int64(during) - int64(before)) / n
		t.Logf("heap: %d KiB before, %d KiB with %d idle sessions: %d bytes each", before>>10, during>>10, n, per)
		if per > 16<<10 {
			t.Errorf("%d bytes per idle session, want at most 16 KiB", per)
		}
		if got := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, "Content-Type: application/json"); got.Code != 503 {
			t.Fatalf("session %d: %d, want 503 (MaxSessions)", n+1, got.Code)
		}
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if s := srv.Sessions(); s != 0 {
			t.Fatalf("%d sessions left after IdleTimeout", s)
		}
		after := heap()
		t.Logf("heap after expiry: %d KiB, %d goroutines", after>>10, runtime.NumGoroutine())
		// The runtime keeps the descriptors of goroutines that have
		// exited for reuse (about 1 KiB each, one per session here):
		// what the sessions themselves held must be gone.
		if kept := int64(after) - int64(before); kept > (int64(during)-int64(before))/4 {
			t.Errorf("heap %d KiB after expiry, %d KiB before, %d KiB with the sessions: they were not freed", after>>10, before>>10, during>>10)
		}
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// heap returns the bytes of live heap after a collection.
func heap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSessionShutdown pins Shutdown: sessions end (their clients see
// ErrSessionExpired at their next request), new ones get 503, and nothing
// keeps running.
func TestSessionShutdown(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	c := ts.dial(t, nil, DialOptions{RetryDelay: time.Millisecond})
	ctx := testCtx(t, wait)
	if err := c.Call(ctx, "echo", []int{1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := ts.Sessions(); n != 0 {
		t.Fatalf("%d sessions after Shutdown", n)
	}
	if err := waitErr(t, "the client", c); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("the client ended with %v, want ErrSessionExpired", err)
	}
	resp, _ := rawRequest(t, ts, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"echo"}`, "Content-Type: application/json")
	if resp.StatusCode != 503 {
		t.Fatalf("a new session after Shutdown: %s", resp.Status)
	}
}

// TestSessionInboxBound pins the bound on what a session holds posted but
// not read: while its Peer pushes back (its notification handler is
// stuck and its inbound budget full), POSTs wait, and once they would
// pass twice MaxBodySize the next gets 503 with a JSON-RPC error, instead
// of the inbox growing. Once the handler goes on, the waiting ones are
// taken (202).
func TestSessionInboxBound(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // first: the handler must not outlive the test
	m := testMux()
	m.HandleFunc("stuck", func(context.Context, *jsonrpc.Request) (any, error) {
		<-release
		return nil, nil
	})
	ts := startSessions(t, &SessionServer{
		Peer:        jsonrpc.Options{Handler: m, MaxQueuedBytes: 1024},
		MaxBodySize: 2048,
	})
	sid := startSession(t, ts)
	note := `{"jsonrpc":"2.0","method":"stuck","params":["` + strings.Repeat("x", 900) + `"]}`
	codes := make(chan int, 40)
	for range 40 {
		go func() {
			req, _ := http.NewRequest("POST", ts.url, strings.NewReader(note))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(SessionIDHeader, sid)
			resp, err := ts.hs.Client().Do(req)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	got, refused := 0, false
	for ; !refused; got++ {
		switch c := within(t, codes, "a POST's status"); c {
		case 503:
			refused = true
		case 202:
		default:
			t.Fatalf("status %d", c)
		}
	}
	once.Do(func() { close(release) })
	for ; got < 40; got++ {
		if c := within(t, codes, "a POST's status"); c != 202 && c != 503 {
			t.Fatalf("status %d", c)
		}
	}
}
