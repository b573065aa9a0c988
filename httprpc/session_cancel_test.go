package httprpc

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// TestSessionCancelledCallEndsItsStream pins that a call the client
// cancels, in a dialect whose cancelled calls get no reply (MCP's), ends
// the event stream of its POST once the cancel is read: no reply will
// ever come to end it, and an open stream would hold the POST's
// connection, and keep the session from idling, for as long as the
// session lives.
func TestSessionCancelledCallEndsItsStream(t *testing.T) {
	started := make(chan struct{}, 1)
	mux := testMux()
	mux.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: mux, Cancel: jsonrpc.MCPCancel}})
	sid := startSession(t, ts)

	req, err := http.NewRequestWithContext(testCtx(t, wait), "POST", ts.url,
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"block"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(SessionIDHeader, sid)
	resp, err := ts.hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	within(t, started, "the handler to start")

	cancel, body := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
		"Content-Type: application/json", "Accept: application/json, text/event-stream", SessionIDHeader+": "+sid)
	if cancel.StatusCode != http.StatusAccepted {
		t.Fatalf("the cancel: %s %q, want 202", cancel.Status, body)
	}
	read := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(resp.Body)
		read <- string(b)
	}()
	select {
	case stream := <-read:
		if strings.Contains(stream, "data:") {
			t.Errorf("the cancelled call's stream carried a message: %q", stream)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the cancelled call's event stream is still open 2 s after the cancel was accepted")
	}
	// The session goes on.
	if resp, body := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":8,"method":"echo","params":[1]}`,
		"Content-Type: application/json", "Accept: application/json", SessionIDHeader+": "+sid); resp.StatusCode != 200 || !strings.Contains(body, `"result":[1]`) {
		t.Errorf("a call after the cancel: %s %q", resp.Status, body)
	}
}
