//go:build !js

package ws_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

type baseKey struct{}

// TestServerHonoursPeerHooks (issue 31, point 7): a ws.Server runs the
// OnConnect of its Peer options on every connection, before its own, and
// its handlers see the upgrade request's context values over those of the
// Peer options' BaseContext, as httprpc's servers run them; a connection
// that Peer.OnConnect refuses reaches neither the Server's OnConnect nor
// its OnDisconnect. On 3db20dd the Server replaced both with its own: 0
// of 2 connections ran the Peer's OnConnect, and no handler saw the base.
func TestServerHonoursPeerHooks(t *testing.T) {
	var (
		mu     sync.Mutex
		order  []string
		peerOK = 2 // connections Peer.OnConnect lets in; it refuses the rest
		ends   = make(chan *jsonrpc.Peer, 4)
	)
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "ctx", func(ctx context.Context, _ struct{}) ([2]string, error) {
		user, _ := ctx.Value(userKey{}).(string)
		base, _ := ctx.Value(baseKey{}).(string)
		return [2]string{user, base}, nil
	})
	base := context.WithValue(context.WithValue(context.Background(), baseKey{}, "base"), userKey{}, "nobody")
	srv := &ws.Server{
		Peer: jsonrpc.Options{
			Handler:     m,
			BaseContext: base,
			OnConnect: func(p *jsonrpc.Peer) {
				mu.Lock()
				refuse := peerOK == 0
				peerOK--
				mu.Unlock()
				if refuse {
					note("peer refused")
					p.Close()
					return
				}
				note("peer")
			},
		},
		OnConnect:    func(*jsonrpc.Peer, *http.Request) { note("server") },
		OnDisconnect: func(p *jsonrpc.Peer, _ error) { ends <- p },
	}
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, r.Header.Get("X-Test-User"))))
	})
	hs := httptest.NewServer(auth)
	t.Cleanup(func() {
		srv.Shutdown(testCtx(t, wait))
		hs.Close()
	})
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	dial := func(user string) *jsonrpc.Peer {
		t.Helper()
		p, err := ws.Dial(testCtx(t, wait), url, ws.DialOptions{HTTPHeader: http.Header{"X-Test-User": {user}}})
		if err != nil {
			t.Fatal(err)
		}
		cleanupPeer(t, p)
		return p
	}
	for _, user := range []string{"ada", "grace"} {
		var got [2]string
		if err := dial(user).Call(testCtx(t, wait), "ctx", nil, &got); err != nil || got != [2]string{user, "base"} {
			t.Errorf("a handler of %s's connection saw (user, base) = %q, %v; want the request's user over the base's, and the base's own value", user, got, err)
		}
	}
	refused := dial("eve")
	select {
	case <-refused.Done():
	case <-testCtx(t, wait).Done():
		t.Fatal("the connection Peer.OnConnect refused is still open")
	}
	mu.Lock()
	got := strings.Join(order, ", ")
	mu.Unlock()
	if want := "peer, server, peer, server, peer refused"; got != want {
		t.Errorf("hooks ran: %s; want %s", got, want)
	}
	if err := srv.Shutdown(testCtx(t, wait)); err != nil {
		t.Fatal(err)
	}
	if len(ends) != 2 {
		t.Errorf("OnDisconnect ran %d times, want 2: once per connection the Server's OnConnect saw", len(ends))
	}
}
