package httprpc

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peerwire/jsonrpc"
)

// serveRecorded serves one request to srv in memory and returns the
// recorded response.
func serveRecorded(srv http.Handler, method, body string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
	setHeaders(req, headers)
	return serveRecordedReq(srv, req)
}

// serveRequest is a POST of body with ctx, for serveRecordedReq.
func serveRequest(ctx context.Context, body []byte, headers ...string) *http.Request {
	req := httptest.NewRequestWithContext(ctx, "POST", "/mcp", bytes.NewReader(body))
	setHeaders(req, headers)
	return req
}

func setHeaders(req *http.Request, headers []string) {
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
}

// serveRecordedReq serves req to srv in memory.
func serveRecordedReq(srv http.Handler, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	return w
}

// TestSessionIdleExpiry pins IdleTimeout on a fake clock: a session with
// no request for that long ends (cause ErrSessionIdle) and its id gets
// 404; one whose handler is still running is not idle, however long it
// runs, and expires only once idle after it.
func TestSessionIdleExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		m := testMux()
		m.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
			<-release
			return "released", nil
		})
		ends := make(chan error, 2)
		srv := &SessionServer{
			Peer:          jsonrpc.Options{Handler: m},
			IdleTimeout:   time.Minute,
			UnusedTimeout: -1, // TestSessionUnusedExpiry holds it
			OnDisconnect:  func(_ *jsonrpc.Peer, cause error) { ends <- cause },
		}
		const ct, js = "Content-Type: application/json", "Accept: application/json"
		idle := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}`, ct, js).Header().Get(SessionIDHeader)
		busy := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}`, ct, js).Header().Get(SessionIDHeader)
		blocked := make(chan *httptest.ResponseRecorder)
		go func() {
			blocked <- serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":2,"method":"block"}`, ct, js, "Mcp-Session-Id: "+busy)
		}()
		time.Sleep(30 * time.Second)
		if w := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","method":"echo"}`, ct, js, "Mcp-Session-Id: "+idle); w.Code != 202 {
			t.Fatalf("a notification at 30 s: %d", w.Code)
		}
		time.Sleep(59 * time.Second) // 59 s after the idle session's last request
		if srv.Sessions() != 2 {
			t.Fatalf("%d sessions at 89 s, want 2", srv.Sessions())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if err := <-ends; !errors.Is(err, ErrSessionIdle) {
			t.Fatalf("the idle session ended with %v, want ErrSessionIdle", err)
		}
		if w := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":1,"method":"echo"}`, ct, js, "Mcp-Session-Id: "+idle); w.Code != 404 {
			t.Fatalf("the expired session's id: %d, want 404", w.Code)
		}
		time.Sleep(10 * time.Minute)
		if srv.Sessions() != 1 {
			t.Fatalf("the session whose handler runs is gone after 10 min: %d sessions", srv.Sessions())
		}
		close(release)
		if w := <-blocked; w.Code != 200 || !strings.Contains(w.Body.String(), "released") {
			t.Fatalf("the blocked call: %d %q", w.Code, w.Body)
		}
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if err := <-ends; !errors.Is(err, ErrSessionIdle) || srv.Sessions() != 0 {
			t.Fatalf("after its call, the busy session ended with %v (%d left), want ErrSessionIdle", err, srv.Sessions())
		}
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSessionDelete pins DELETE through the client: closing a dialled
// Peer deletes its session on the server, a clean end (its Peer's Wait
// and OnDisconnect's cause are nil; see TestSessionDeleteIsCleanEnd), and
// the session's id then gets 404.
func TestSessionDelete(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	c := ts.dial(t, nil, DialOptions{})
	if err := c.Call(testCtx(t, wait), "echo", []int{1}, nil); err != nil {
		t.Fatal(err)
	}
	server := ts.nextPeer(t)
	c.Close()
	if err := ts.nextEnd(t); err != nil {
		t.Fatalf("server session ended with %v, want nil (a clean end)", err)
	}
	if err := waitErr(t, "the server Peer", server); err != nil {
		t.Fatalf("the server Peer's Wait: %v, want nil", err)
	}
	if n := ts.Sessions(); n != 0 {
		t.Fatalf("%d sessions after DELETE", n)
	}
}

// TestSessionExpiredClient pins what a dialled Peer sees when the server
// forgets its session: the next call fails with ErrSessionExpired, and so
// does the Peer's end.
func TestSessionExpiredClient(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	c := ts.dial(t, nil, DialOptions{RetryDelay: time.Millisecond})
	ctx := testCtx(t, wait)
	if err := c.Call(ctx, "echo", []int{1}, nil); err != nil {
		t.Fatal(err)
	}
	ts.nextPeer(t).Close() // the server ends the session by itself
	ts.nextEnd(t)
	err := c.Call(ctx, "echo", []int{2}, nil)
	if !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("a call after the session ended: %v, want ErrSessionExpired", err)
	}
	if err := waitErr(t, "the client Peer", c); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("the client Peer ended with %v", err)
	}
}

// lockedWriter is a ResponseWriter whose body the test may read while the
// handler writes it.
type lockedWriter struct {
	mu     sync.Mutex
	header http.Header
	body   bytes.Buffer
}

func (w *lockedWriter) Header() http.Header { return w.header }
func (w *lockedWriter) WriteHeader(int)     {}
func (w *lockedWriter) Flush()              {}
func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(b)
}
func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.String()
}

// TestSessionStreamKeepalive pins, on a fake clock, that a silent event
// stream gets a comment every 30 s, and that a session with an open
// stream is not idle, however long; once the stream is gone, it expires.
func TestSessionStreamKeepalive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, IdleTimeout: time.Minute}
		sid := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`,
			"Content-Type: application/json", "Accept: application/json").Header().Get(SessionIDHeader)
		ctx, cancel := context.WithCancel(context.Background())
		req := httptest.NewRequestWithContext(ctx, "GET", "/mcp", nil)
		setHeaders(req, []string{"Accept: text/event-stream", "Mcp-Session-Id: " + sid})
		w := &lockedWriter{header: http.Header{}}
		done := make(chan struct{})
		go func() { srv.ServeHTTP(w, req); close(done) }()
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if got := w.String(); !strings.Contains(got, ": keepalive\n\n") {
			t.Fatalf("a silent stream after 31 s: %q, want a keepalive comment", got)
		}
		time.Sleep(10 * time.Minute)
		if srv.Sessions() != 1 {
			t.Fatal("a session with an open stream expired")
		}
		if n := strings.Count(w.String(), ": keepalive"); n < 20 {
			t.Fatalf("%d keepalives in 10.5 min, want one each 30 s", n)
		}
		cancel() // the client goes away
		<-done
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if srv.Sessions() != 0 {
			t.Fatal("the session did not expire once its stream was gone")
		}
		srv.Shutdown(context.Background())
	})
}
