//go:build unix

package browser_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// TestNodeReviewHeartbeatBusyServer runs test/review_heartbeat.test.mjs
// against a Go server that is alive and reading but whose handler slots
// are all busy with the page's own slow calls, each of which tells the
// page it started (a progress-like notification) before it works for
// 3 s: rpc.ping is queued behind them like any call.
func TestNodeReviewHeartbeatBusyServer(t *testing.T) {
	mux := jsonrpc.NewMux()
	mux.HandleFunc("slow", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		p := jsonrpc.PeerFromContext(ctx)
		_ = p.Notify(ctx, "started", nil)
		select {
		case <-time.After(3 * time.Second):
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	srv := &ws.Server{Peer: jsonrpc.Options{Handler: mux, MaxConcurrent: 2}}
	hmux := http.NewServeMux()
	hmux.Handle("/rpc", srv)
	hs := httptest.NewServer(hmux)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("ws.Server.Shutdown: %v", err)
		}
		hs.Close()
	}()
	runNode(t, 60*time.Second, []string{"REVIEW_BASE=" + hs.URL},
		"--experimental-websocket", "--test", "--test-reporter=spec", "--test-timeout=30000", "review_heartbeat.test.mjs")
}
