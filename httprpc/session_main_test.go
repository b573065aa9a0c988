package httprpc

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every blocking step of the tests.
const wait = 5 * time.Second

// testCtx returns a ctx that ends after d or with the test.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// sessionServer is a SessionServer on a loopback httptest server. The Peer
// of each session arrives on peers, and each session's end on ends.
type sessionServer struct {
	*SessionServer
	hs    *httptest.Server
	url   string
	peers chan *jsonrpc.Peer
	ends  chan error
}

// startSessions serves srv on 127.0.0.1 until the test ends, then shuts it
// down.
func startSessions(t testing.TB, srv *SessionServer) *sessionServer {
	return startSessionsWith(t, srv, nil)
}

// startSessionsWith is startSessions with tweak, if not nil, adjusting the
// httptest server before it starts.
func startSessionsWith(t testing.TB, srv *SessionServer, tweak func(*httptest.Server)) *sessionServer {
	if srv.StartMethods == nil {
		srv.StartMethods = testStartMethods
	}
	ts := &sessionServer{SessionServer: srv, peers: make(chan *jsonrpc.Peer, 64), ends: make(chan error, 64)}
	srv.OnConnect = func(p *jsonrpc.Peer, r *http.Request) {
		select {
		case ts.peers <- p:
		default:
		}
	}
	srv.OnDisconnect = func(p *jsonrpc.Peer, cause error) {
		select {
		case ts.ends <- cause:
		default:
		}
	}
	ts.hs = httptest.NewUnstartedServer(srv)
	if tweak != nil {
		tweak(ts.hs)
	}
	ts.hs.Start()
	ts.url = ts.hs.URL + "/mcp"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("SessionServer.Shutdown at cleanup: %v", err)
		}
		ts.hs.Close()
	})
	return ts
}

// testStartMethods start a session in the tests that run a SessionServer
// on a loopback server (startSessions) and set no StartMethods: most
// start theirs with a call of their own. The default, initialize only, is
// held by TestSessionStartMethods.
var testStartMethods = []string{"initialize", "echo", "sleep", "fail", "whoami", "count", "ask", "block", "hold", "tools/list", "tools/call", "callback", "add", "slow", "burst"}

// nextPeer returns the Peer of the next session started.
func (ts *sessionServer) nextPeer(t testing.TB) *jsonrpc.Peer {
	t.Helper()
	select {
	case p := <-ts.peers:
		return p
	case <-time.After(wait):
		t.Fatal("no session reached OnConnect")
		return nil
	}
}

// nextEnd returns the cause of the next session to end.
func (ts *sessionServer) nextEnd(t testing.TB) error {
	t.Helper()
	select {
	case err := <-ts.ends:
		return err
	case <-time.After(wait):
		t.Fatal("no session reached OnDisconnect")
		return nil
	}
}

// dial returns a client Peer serving h, closed and waited for when the
// test ends.
func (ts *sessionServer) dial(t testing.TB, h jsonrpc.Handler, o DialOptions) *jsonrpc.Peer {
	t.Helper()
	if o.HTTPClient == nil {
		o.HTTPClient = ts.hs.Client()
	}
	o.Peer.Handler = h
	p, err := Dial(testCtx(t, wait), ts.url, o)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	cleanupPeer(t, p)
	return p
}

// cleanupPeer closes p when the test ends and waits, within a bound, for it.
func cleanupPeer(t testing.TB, p *jsonrpc.Peer) {
	t.Cleanup(func() {
		p.Close()
		waitErr(t, "Peer.Wait at cleanup", p)
	})
}

// waitErr returns p.Wait()'s result, failing the test if it takes too long.
func waitErr(t testing.TB, what string, p *jsonrpc.Peer) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- p.Wait() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(wait):
		t.Fatalf("%s did not return within %v", what, wait)
		return nil
	}
}

// within receives from ch, failing the test if nothing comes in time.
func within[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// testMux serves initialize and echo (params back), sleep (params {"ms":
// n}; ends early with its ctx) and fail (an application error 42).
func testMux() *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	m.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		return r.Params, nil
	})
	m.HandleFunc("initialize", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		return r.Params, nil
	})
	m.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(42, "boom", nil)
	})
	jsonrpc.Register(m, "sleep", func(ctx context.Context, p struct{ MS int }) (int, error) {
		select {
		case <-time.After(time.Duration(p.MS) * time.Millisecond):
			return p.MS, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
	return m
}

// rawRequest sends one request to the endpoint with the given headers
// ("Header: value" strings) and returns the response with its body read.
func rawRequest(t testing.TB, ts *sessionServer, method, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t, wait), method, ts.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	resp, err := ts.hs.Client().Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the body: %v", method, err)
	}
	return resp, string(b)
}

// startSession posts initialize and returns the session id.
func startSession(t testing.TB, ts *sessionServer) string {
	t.Helper()
	resp, body := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"hello":1}}`,
		"Content-Type: application/json", "Accept: application/json")
	id := resp.Header.Get(SessionIDHeader)
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("starting a session: %s %q, id %q", resp.Status, body, id)
	}
	return id
}

func jsonEqual(t testing.TB, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("bad JSON %q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("bad JSON %q: %v", b, err)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}
