package httprpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// TestBodyTooLarge: a body over MaxBodySize is answered 413 and never
// reaches a handler, whether its Content-Length says so or it is chunked;
// one at the limit is served.
func TestBodyTooLarge(t *testing.T) {
	var calls int
	var mu sync.Mutex
	m := jsonrpc.NewMux()
	m.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return r.Params, nil
	})
	hs := startServer(t, &httprpc.Server{Peer: jsonrpc.Options{Handler: m}, MaxBodySize: 1000})
	body := func(n int) string {
		head := `{"jsonrpc":"2.0","id":1,"method":"echo","params":["`
		tail := `"]}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	if resp, got := post(t, hs.URL, "application/json", body(1000)); resp.StatusCode != 200 || !strings.Contains(got, `"result":["xxx`) {
		t.Fatalf("a body of 1000 bytes: %d %.80s", resp.StatusCode, got)
	}
	if resp, _ := post(t, hs.URL, "application/json", body(1001)); resp.StatusCode != 413 {
		t.Fatalf("a body of 1001 bytes: status %d, want 413", resp.StatusCode)
	}
	// Chunked: no Content-Length, so the limit bites while reading.
	req, err := http.NewRequestWithContext(testCtx(t, wait), http.MethodPost, hs.URL,
		io.MultiReader(strings.NewReader(body(1001)))) // not a *strings.Reader: no length
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if resp, _ := do(t, req); resp.StatusCode != 413 || req.ContentLength != 0 {
		t.Fatalf("a chunked body of 1001 bytes: status %d (length %d), want 413", resp.StatusCode, req.ContentLength)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Fatalf("the handler ran %d times, want once", calls)
	}
}

// TestMaxRequests: past MaxRequests requests at once, one more is answered
// 503 with Retry-After at once; once one ends, the next is served.
func TestMaxRequests(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	m := jsonrpc.NewMux()
	m.HandleFunc("hold", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "held", nil
	})
	jsonrpc.Register(m, "add", func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil })
	hs := startServer(t, &httprpc.Server{Peer: jsonrpc.Options{Handler: m}, MaxRequests: 2})
	c := newClient(t, hs.URL, httprpc.ClientOptions{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			var s string
			if err := c.Call(testCtx(t, wait), "hold", nil, &s); err != nil || s != "held" {
				t.Errorf("hold: %q %v", s, err)
			}
		})
	}
	<-entered
	<-entered
	resp, _ := post(t, hs.URL, "application/json", `{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("a third request: status %d Retry-After %q, want 503 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	var se *httprpc.StatusError
	if err := c.Call(testCtx(t, wait), "add", []int{1, 2}, nil); !errors.As(err, &se) || se.Code != 503 {
		t.Errorf("a third Call: %v, want a StatusError 503", err)
	}
	close(release)
	wg.Wait()
	var sum int
	if err := c.Call(testCtx(t, wait), "add", []int{1, 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("after the others ended: %d %v", sum, err)
	}
}

// startHTTPServer runs NewHTTPServer's server on a loopback listener, with
// its read timeouts shortened to d, until the test ends.
func startHTTPServer(t testing.TB, h http.Handler, d time.Duration) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := httprpc.NewHTTPServer(ln.Addr().String(), h)
	if hs.ReadHeaderTimeout != 10*time.Second || hs.ReadTimeout != 30*time.Second || hs.IdleTimeout != 120*time.Second || hs.WriteTimeout != 0 {
		t.Fatalf("NewHTTPServer's timeouts are not the documented ones: %+v", hs)
	}
	hs.ReadHeaderTimeout, hs.ReadTimeout = d, d
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		<-done
	})
	return ln.Addr().String()
}

// TestSlowClientsBounded: with NewHTTPServer's timeouts (shortened here to
// 300 ms), a client that trickles its headers, or its body, is cut off
// within the timeout, and the body's MaxRequests slot is free again; a
// handler that runs longer than ReadTimeout still answers.
func TestSlowClientsBounded(t *testing.T) {
	const d = 300 * time.Millisecond
	m := testMux()
	addr := startHTTPServer(t, &httprpc.Server{Peer: jsonrpc.Options{Handler: m}, MaxRequests: 1}, d)
	url := "http://" + addr + "/"
	slow := func(t *testing.T, send string) {
		c, err := net.DialTimeout("tcp", addr, wait)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		t0 := time.Now()
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		_, err = io.Copy(io.Discard, c) // until the server closes it
		if el := time.Since(t0); err != nil || el > d+2*time.Second {
			t.Fatalf("the server let the connection be for %v (%v), want about %v", el, err, d)
		}
	}
	t.Run("headers", func(t *testing.T) {
		slow(t, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
	})
	t.Run("body", func(t *testing.T) {
		slow(t, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":")
		// The slot is free: the one request MaxRequests allows is served.
		if resp, body := post(t, url, "application/json", `{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`); resp.StatusCode != 200 {
			t.Fatalf("after a slow body: %d %s", resp.StatusCode, body)
		}
	})
	t.Run("long handler", func(t *testing.T) {
		ms := int(3 * d / time.Millisecond)
		resp, body := post(t, url, "application/json", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"sleep","params":[%d]}`, ms))
		if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":%d}`, ms); resp.StatusCode != 200 || body != want {
			t.Fatalf("a handler of %d ms: %d %s, want %s", ms, resp.StatusCode, body, want)
		}
	})
}

// TestClientGoneCancelsHandler: a client that drops its connection while
// the handler runs cancels the handler's ctx (a raw TCP client, not ours).
func TestClientGoneCancelsHandler(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan error, 1)
	m := jsonrpc.NewMux()
	m.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		close(started)
		select {
		case <-ctx.Done():
			cancelled <- nil
		case <-time.After(wait):
			cancelled <- errors.New("the handler's ctx was not cancelled")
		}
		return nil, ctx.Err()
	})
	hs := startServer(t, &httprpc.Server{Peer: jsonrpc.Options{Handler: m}})
	c, err := net.DialTimeout("tcp", hs.Listener.Addr().String(), wait)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"block"}`
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	<-started
	c.Close()
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
}

// TestKeepAlive: one http.Client connection carries many calls (bodies
// read and closed), so a Client opens one connection for calls in turn.
func TestKeepAlive(t *testing.T) {
	hs := startServer(t, newServer())
	var dials int
	var mu sync.Mutex
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dials++
		mu.Unlock()
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c := httprpc.NewClient(hs.URL, httprpc.ClientOptions{HTTPClient: &http.Client{Transport: tr}})
	for i := range 20 {
		var err error
		switch i % 4 {
		case 0:
			err = c.Call(testCtx(t, wait), "add", []int{i, i}, nil)
		case 1:
			err = c.Notify(testCtx(t, wait), "note", struct{}{})
		case 2:
			err = c.Call(testCtx(t, wait), "fail", nil, nil)
			var e *jsonrpc.Error
			if errors.As(err, &e) {
				err = nil
			}
		case 3:
			err = c.Batch(testCtx(t, wait), []jsonrpc.BatchElem{{Method: "add", Params: []int{1, 2}}, {Method: "note", Notification: true}})
		}
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if dials != 1 {
		t.Fatalf("%d connections for 20 requests in turn, want 1", dials)
	}
}
