package httprpc_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// addMux serves bench/'s W1 method: add {"a":1,"b":2} → 3.
func addMux() *jsonrpc.Mux {
	type addParams struct{ A, B int }
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "add", func(_ context.Context, p addParams) (int, error) { return p.A + p.B, nil })
	return m
}

// BenchmarkPostCall is W1 over plain POST: one add call in flight, a
// Client against a Server on loopback, keep-alive; client and server
// together in B/op and allocs/op.
func BenchmarkPostCall(b *testing.B) {
	hs := httptest.NewServer(&httprpc.Server{Peer: jsonrpc.Options{Handler: addMux()}})
	defer hs.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := httprpc.NewClient(hs.URL, httprpc.ClientOptions{HTTPClient: &http.Client{Transport: tr}})
	ctx := context.Background()
	params := map[string]int{"a": 1, "b": 2}
	b.ReportAllocs()
	for b.Loop() {
		var sum int
		if err := c.Call(ctx, "add", params, &sum); err != nil || sum != 3 {
			b.Fatalf("add: %d %v", sum, err)
		}
	}
}

// BenchmarkServeHTTP is the Server's share of a call: ServeHTTP on an
// in-memory request and recorder, no network, so that what the Peer per
// request costs shows.
func BenchmarkServeHTTP(b *testing.B) {
	srv := &httprpc.Server{Peer: jsonrpc.Options{Handler: addMux()}}
	const body = `{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1,"b":2}}`
	const want = `{"jsonrpc":"2.0","id":1,"result":3}`
	rd := strings.NewReader(body)
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		req := httptest.NewRequest(http.MethodPost, "/", rd)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != 200 || w.Body.String() != want {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}

// BenchmarkServeHTTPBaseline is BenchmarkServeHTTP's floor: the same
// request and recorder, and a handler that answers the fixed reply
// without JSON-RPC.
func BenchmarkServeHTTPBaseline(b *testing.B) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1,"b":2}}`
	reply := []byte(`{"jsonrpc":"2.0","id":1,"result":3}`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 128)
		n, _ := r.Body.Read(buf)
		_ = buf[:n]
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	})
	rd := strings.NewReader(body)
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		req := httptest.NewRequest(http.MethodPost, "/", rd)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
	}
}
