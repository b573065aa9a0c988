package httprpc_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// wait bounds every blocking step of the tests.
const wait = 5 * time.Second

// testCtx returns a ctx that ends after d or with the test.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startServer serves h on a loopback httptest server until the test ends.
func startServer(t testing.TB, h http.Handler) *httptest.Server {
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs
}

// testMux serves add ([a, b] → a+b), echo (params back), fail (error 42
// with data), sleep (params ms; ends early with its ctx) and note (a
// notification handler that fails).
func testMux() *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "add", func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil })
	m.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) { return r.Params, nil })
	m.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(42, "boom", map[string]int{"n": 7})
	})
	jsonrpc.Register(m, "sleep", func(ctx context.Context, ms int) (int, error) {
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return ms, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
	jsonrpc.RegisterNotification(m, "note", func(context.Context, struct{}) error {
		return jsonrpc.NewError(1, "a failing notification", nil)
	})
	return m
}

// post sends body to url with the given Content-Type and returns the
// response, its body read in full.
func post(t testing.TB, url, ctype, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t, wait), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return do(t, req)
}

func do(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	return resp, string(b)
}

// newServer is a Server serving testMux.
func newServer() *httprpc.Server {
	return &httprpc.Server{Peer: jsonrpc.Options{Handler: testMux()}}
}
