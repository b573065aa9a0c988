package httprpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/peerwire/jsonrpc"
)

// TestSessionEndToEnd pins the happy path of Dial against SessionServer
// over loopback HTTP: a call, an application error, a notification, a
// batch, and a handler that calls the client back and reports progress
// while its call runs (over the POST's event stream), then a push from the
// server outside any call (over the GET stream).
func TestSessionEndToEnd(t *testing.T) {
	notes := make(chan string, 4)
	m := testMux()
	m.HandleFunc("note", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		notes <- string(r.Params)
		return nil, nil
	})
	m.HandleFunc("ask", func(ctx context.Context, r *jsonrpc.Request) (any, error) {
		if err := jsonrpc.ReportProgress(ctx, map[string]any{"progress": 1, "total": 2}); err != nil {
			return nil, err
		}
		var answer string
		if err := jsonrpc.PeerFromContext(ctx).Call(ctx, "sample", r.Params, &answer); err != nil {
			return nil, err
		}
		if err := jsonrpc.ReportProgress(ctx, map[string]any{"progress": 2, "total": 2}); err != nil {
			return nil, err
		}
		return "got " + answer, nil
	})
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: m, Progress: jsonrpc.MCPProgress}})

	client := jsonrpc.NewMux()
	client.HandleFunc("sample", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		return "sampled " + string(r.Params), nil
	})
	pushes := make(chan string, 4)
	client.HandleFunc("push", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		pushes <- string(r.Params)
		return nil, nil
	})
	c := ts.dial(t, client, DialOptions{Peer: jsonrpc.Options{Progress: jsonrpc.MCPProgress}})
	ctx := testCtx(t, wait)

	var echoed []int
	if err := c.Call(ctx, "echo", []int{1, 2}, &echoed); err != nil || len(echoed) != 2 {
		t.Fatalf("echo: %v %v", echoed, err)
	}
	server := ts.nextPeer(t)
	var e *jsonrpc.Error
	if err := c.Call(ctx, "fail", nil, nil); !errors.As(err, &e) || e.Code != 42 || e.Message != "boom" {
		t.Fatalf("fail: %v, want the application error 42", err)
	}
	if err := c.Notify(ctx, "note", []string{"n"}); err != nil {
		t.Fatal(err)
	}
	if got := within(t, notes, "the notification"); got != `["n"]` {
		t.Fatalf("notification params %s", got)
	}
	batch := []jsonrpc.BatchElem{
		{Method: "echo", Params: []int{7}, Result: new(json.RawMessage)},
		{Method: "fail", Result: new(json.RawMessage)},
		{Method: "note", Params: []string{"b"}, Notification: true},
	}
	if err := c.Batch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if got := string(*batch[0].Result.(*json.RawMessage)); got != "[7]" || batch[1].Error == nil {
		t.Fatalf("batch: %s, %v", got, batch[1].Error)
	}
	within(t, notes, "the batch's notification")

	var progress []string
	var mu sync.Mutex
	pctx := jsonrpc.WithProgress(ctx, func(v json.RawMessage) {
		mu.Lock()
		progress = append(progress, string(v))
		mu.Unlock()
	})
	var answer string
	if err := c.Call(pctx, "ask", map[string]string{"q": "?"}, &answer); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(answer, `got sampled {`) || !strings.Contains(answer, `"q":"?"`) {
		t.Fatalf("ask: %q", answer)
	}
	mu.Lock()
	if len(progress) != 2 {
		t.Errorf("progress %v, want 2 reports", progress)
	}
	mu.Unlock()

	if err := server.Notify(ctx, "push", []string{"hi"}); err != nil {
		t.Fatal(err)
	}
	if got := within(t, pushes, "the push on the GET stream"); got != `["hi"]` {
		t.Fatalf("push %s", got)
	}
}
