//go:build !js

package ws_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

type userKey struct{}

// TestHandlersSeeRequestContext: what HTTP middleware puts in the upgrade
// request's context (the authenticated user) reaches every handler of the
// connection through its ctx, without OnConnect and a map keyed by Peer;
// the request's cancellation does not end the handlers.
func TestHandlersSeeRequestContext(t *testing.T) {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "whoami", func(ctx context.Context, _ struct{}) (string, error) {
		user, _ := ctx.Value(userKey{}).(string)
		return user, ctx.Err()
	})
	srv := &ws.Server{Peer: jsonrpc.Options{Handler: m}}
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := r.Header.Get("X-Test-User")
		if user == "" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		srv.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
	hs := httptest.NewServer(auth)
	t.Cleanup(func() {
		srv.Shutdown(testCtx(t, wait))
		hs.Close()
	})
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	for _, user := range []string{"ada", "grace"} {
		p, err := ws.Dial(testCtx(t, wait), url, ws.DialOptions{HTTPHeader: http.Header{"X-Test-User": {user}}})
		if err != nil {
			t.Fatal(err)
		}
		cleanupPeer(t, p)
		var got string
		if err := p.Call(testCtx(t, wait), "whoami", nil, &got); err != nil || got != user {
			t.Errorf("whoami = %q, %v; want %q", got, err, user)
		}
	}
	if _, resp, err := websocket.Dial(testCtx(t, wait), url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("Dial without a user: %v, want HTTP 401", err)
	}
}

// TestOnDisconnect: the Server reports each connection's end, after its
// handlers have returned, with the cause Wait gives.
func TestOnDisconnect(t *testing.T) {
	type ended struct {
		p     *jsonrpc.Peer
		cause error
	}
	ends := make(chan ended, 2)
	connected := make(chan *jsonrpc.Peer, 2)
	ts := startServer(t, &ws.Server{
		OnConnect:    func(p *jsonrpc.Peer, _ *http.Request) { connected <- p },
		OnDisconnect: func(p *jsonrpc.Peer, cause error) { ends <- ended{p, cause} },
	}, nil)
	client := ts.dial(t, nil, nil)
	server := <-connected
	client.Close()
	select {
	case e := <-ends:
		if e.p != server || e.cause != nil {
			t.Errorf("OnDisconnect(%p, %v), want (%p, nil) after a clean close", e.p, e.cause, server)
		}
	case <-testCtx(t, wait).Done():
		t.Fatal("OnDisconnect was not called")
	}

	raw := ts.rawDial(t, nil)
	<-connected
	raw.CloseNow() // no close frame: an abnormal end
	select {
	case e := <-ends:
		if !errors.Is(e.cause, ws.ErrConnectionLost) {
			t.Errorf("OnDisconnect cause %v, want ErrConnectionLost", e.cause)
		}
	case <-testCtx(t, wait).Done():
		t.Fatal("OnDisconnect was not called for the dropped connection")
	}
}
