package httprpc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// TestDialLongCallDoesNotBlock pins that a call whose event stream lasts
// does not hold back the next message: while a call sleeps on the server,
// other calls and notifications go and come back.
func TestDialLongCallDoesNotBlock(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	c := ts.dial(t, nil, DialOptions{})
	ctx := testCtx(t, wait)
	long := make(chan error, 1)
	go func() { long <- c.Call(ctx, "sleep", map[string]int{"ms": 1000}, nil) }()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	for i := range 10 {
		if err := c.Call(ctx, "echo", []int{i}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("10 calls took %v while a long one ran", d)
	}
	select {
	case err := <-long:
		t.Fatalf("the long call returned early: %v", err)
	default:
	}
	if err := within(t, long, "the long call"); err != nil {
		t.Fatal(err)
	}
}

// TestDialErrors pins Dial's refusals and the cause a dialled Peer ends
// with when the endpoint refuses its first POST.
func TestDialErrors(t *testing.T) {
	if _, err := Dial(context.Background(), "ftp://x"); err == nil {
		t.Fatal("Dial of an ftp URL succeeded")
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer hs.Close()
	c, err := Dial(testCtx(t, wait), hs.URL, DialOptions{HTTPClient: hs.Client()})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Call(testCtx(t, wait), "echo", nil, nil)
	if err == nil || errors.Is(err, ErrSessionExpired) {
		t.Fatalf("a call refused with 403: %v", err)
	}
	c.Close()
	waitErr(t, "the client", c)
}

// TestDialResumeGivesUp pins the bound on resumption: a stream cut again
// and again, each time before any message comes through, is resumed
// MaxRetries times, and then the connection ends with ErrStreamLost, which
// the pending call fails with.
func TestDialResumeGivesUp(t *testing.T) {
	// The attempts are pinned, not their delay: a retry of 1 ms. The
	// priming event passes, the reply is cut.
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, StreamRetry: time.Millisecond}
	cut := &cutter{h: srv, at: len("id: 1-0\nretry: 1\ndata: \n\n") + 3}
	cut.cuts.Store(100)
	var gets atomic.Int32
	ts := startSessionsWith(t, srv, func(hs *httptest.Server) {
		hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(lastEventIDHeader) != "" {
				gets.Add(1)
			}
			cut.ServeHTTP(w, r)
		})
	})
	c := ts.dial(t, nil, DialOptions{MaxRetries: 3, RetryDelay: time.Millisecond})
	err := c.Call(testCtx(t, wait), "echo", []int{1}, nil)
	if !errors.Is(err, ErrStreamLost) {
		t.Fatalf("a call whose stream cannot be resumed: %v, want ErrStreamLost", err)
	}
	if n := gets.Load(); n != 3 {
		t.Fatalf("%d resumptions, want MaxRetries (3)", n)
	}
}

// TestDialNoStandaloneStream pins that a server without a standalone
// stream (GET answered 405, as the transport allows) is no failure: calls
// go on.
func TestDialNoStandaloneStream(t *testing.T) {
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}}
	var refused atomic.Int32
	ts := startSessionsWith(t, srv, func(hs *httptest.Server) {
		hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				refused.Add(1)
				http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
				return
			}
			srv.ServeHTTP(w, r)
		})
	})
	c := ts.dial(t, nil, DialOptions{})
	ctx := testCtx(t, wait)
	for i := range 3 {
		if err := c.Call(ctx, "echo", []int{i}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(wait); refused.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if err := c.Call(ctx, "echo", []int{3}, nil); err != nil || refused.Load() != 1 {
		t.Fatalf("after the refused GET: %v, %d GETs, want the one", err, refused.Load())
	}
}
