//go:build !js

package ws_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// TestOnConnectRequestCtxLivesWithConnection: a Server.OnConnect hook that
// starts work for the connection under the request's context (a feed
// goroutine, a subscription: the usual way to tie work to a request's
// life) must not see that context end while the connection is open. Since
// ServeHTTP returns once the hooks have run (b34b205), net/http cancels
// the request's context at once; OnConnect's doc says nothing of it (the
// CHANGELOG says only that the hooks see it live).
func TestOnConnectRequestCtxLivesWithConnection(t *testing.T) {
	ended := make(chan error, 1)
	ts := startServer(t, &ws.Server{
		OnConnect: func(p *jsonrpc.Peer, r *http.Request) {
			ctx := r.Context()
			go func() {
				select {
				case <-ctx.Done():
					select {
					case <-p.Done():
						ended <- nil // with the connection: fine
					default:
						ended <- context.Cause(ctx)
					}
				case <-p.Done():
					ended <- nil
				}
			}()
		},
	}, nil)
	client := ts.dial(t, jsonrpc.NewMux(), nil)
	ts.nextPeer(t)
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("the request's context that OnConnect was given ended while the connection was open: %v", err)
		}
		t.Fatal("the connection ended")
	case <-time.After(500 * time.Millisecond): // the connection is open and idle: nothing should end
	}
	client.Close()
	select {
	case <-ended:
	case <-time.After(wait):
		t.Fatal("the watcher did not end with the connection")
	}
}
