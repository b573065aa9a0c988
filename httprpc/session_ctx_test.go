package httprpc

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

type userKey struct{}

// TestSessionBaseContextAndHeaders pins that a session's handlers see the
// values that middleware put in the context of the request that started
// the session, and that Dial sends HTTPHeader on every request (POSTs, the
// GET stream, DELETE), so that such middleware can authenticate them all.
func TestSessionBaseContextAndHeaders(t *testing.T) {
	m := testMux()
	m.HandleFunc("whoami", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		return ctx.Value(userKey{}), nil
	})
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: m}}
	var refused, seen atomic.Int32
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer alice" {
			refused.Add(1)
			http.Error(w, "who?", http.StatusUnauthorized)
			return
		}
		seen.Add(1)
		srv.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, "alice")))
	})
	ts := startSessionsWith(t, srv, func(hs *httptest.Server) { hs.Config.Handler = auth })
	pushed := make(chan struct{}, 1)
	client := jsonrpc.NewMux()
	client.HandleFunc("push", func(context.Context, *jsonrpc.Request) (any, error) {
		pushed <- struct{}{}
		return nil, nil
	})
	c := ts.dial(t, client, DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer alice"}}})
	var who string
	if err := c.Call(testCtx(t, wait), "whoami", nil, &who); err != nil || who != "alice" {
		t.Fatalf("whoami: %q %v", who, err)
	}
	p := ts.nextPeer(t)
	if err := p.Notify(testCtx(t, wait), "push", nil); err != nil { // over the GET stream
		t.Fatal(err)
	}
	within(t, pushed, "the push over the GET stream")
	c.Close()
	ts.nextEnd(t)
	if refused.Load() != 0 || seen.Load() < 3 {
		t.Fatalf("%d requests refused, %d seen: HTTPHeader missing from some", refused.Load(), seen.Load())
	}
}

// TestSessionSecondGETReplaces pins the documented choice for a second GET
// of the standalone stream: it takes over, and the first one's response
// ends.
func TestSessionSecondGETReplaces(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	sid := startSession(t, ts)
	open := func() *http.Response {
		req, _ := http.NewRequestWithContext(testCtx(t, wait), "GET", ts.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set(SessionIDHeader, sid)
		resp, err := ts.hs.Client().Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET: %v %v", resp, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	first := open()
	ended := make(chan error, 1)
	go func() {
		_, _, err := newSSEReader(first.Body, 1024).next() // a priming event only: blocks until the end
		ended <- err
	}()
	select {
	case err := <-ended:
		t.Fatalf("the first GET stream ended alone: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	second := open()
	if err := within(t, ended, "the first GET stream's end"); err != io.EOF {
		t.Fatalf("the first GET stream ended with %v, want a clean end", err)
	}
	if err := ts.nextPeer(t).Notify(testCtx(t, wait), "push", []int{1}); err != nil {
		t.Fatal(err)
	}
	data, _, err := newSSEReader(second.Body, 1024).next()
	if err != nil || string(data) != `{"jsonrpc":"2.0","method":"push","params":[1]}` {
		t.Fatalf("the second GET stream: %q %v", data, err)
	}
}
