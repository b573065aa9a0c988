package httprpc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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
