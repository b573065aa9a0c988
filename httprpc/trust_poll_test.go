package httprpc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// TestSessionPollingMode pins the server side of SEP-1699's polling
// (MaxStreamDuration, StreamRetry): a call's stream is closed every 50 ms
// while its handler runs, each first event asks the client to come back
// after 10 ms, and Dial comes back with Last-Event-ID each time: every
// notification arrives once, in order, then the reply; the standalone
// stream is polled the same way.
func TestSessionPollingMode(t *testing.T) {
	m := testMux()
	m.HandleFunc("slow", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		p := jsonrpc.PeerFromContext(ctx)
		for i := range 20 {
			if err := p.Notify(ctx, "tick", []int{i}); err != nil {
				return nil, err
			}
			time.Sleep(15 * time.Millisecond)
		}
		return "done", nil
	})
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: m}, MaxStreamDuration: 50 * time.Millisecond, StreamRetry: 10 * time.Millisecond}
	var resumes atomic.Int32
	ts := startSessionsWith(t, srv, func(hs *httptest.Server) {
		hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(lastEventIDHeader) != "" {
				resumes.Add(1)
			}
			srv.ServeHTTP(w, r)
		})
	})
	var mu sync.Mutex
	var ticks []int
	client := jsonrpc.NewMux()
	jsonrpc.Register(client, "tick", func(_ context.Context, p [1]int) (any, error) {
		mu.Lock()
		ticks = append(ticks, p[0])
		mu.Unlock()
		return nil, nil
	})
	c := ts.dial(t, client, DialOptions{})
	var got string
	if err := c.Call(testCtx(t, wait), "slow", nil, &got); err != nil || got != "done" {
		t.Fatalf("a call polled: %q %v", got, err)
	}
	if n := resumes.Load(); n < 3 {
		t.Fatalf("%d resumptions during a call of 300 ms with streams of 50 ms", n)
	}
	for end := time.Now().Add(wait); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		k := len(ticks)
		mu.Unlock()
		if k == 20 || time.Now().After(end) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, v := range ticks {
		if v != i || len(ticks) != 20 {
			t.Fatalf("ticks %v: lost, repeated or reordered", ticks)
		}
	}
	t.Logf("%d resumptions (the call's stream and the standalone one)", resumes.Load())
}
