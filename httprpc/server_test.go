package httprpc_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// TestServerPeerOptions: Server.Peer configures each request's Peer as it
// would any Peer: inbound interceptors see the call, MapError shapes the
// error object, MaxBatch refuses a long batch with one error (id null),
// OnConnect gets each request's Peer, and Server.BaseContext replaces the
// request's context values.
func TestServerPeerOptions(t *testing.T) {
	var intercepted, connected atomic.Int64
	type key struct{}
	srv := &httprpc.Server{
		Peer: jsonrpc.Options{
			Handler: testMux(),
			Interceptors: []jsonrpc.Interceptor{func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
				if !info.Outbound {
					intercepted.Add(1)
				}
				if info.Method == "secret" {
					return ctx.Value(key{}), nil
				}
				return next(ctx)
			}},
			MapError: func(err error) *jsonrpc.Error {
				var e *jsonrpc.Error
				if errors.As(err, &e) && e.Code == 42 {
					return jsonrpc.NewError(4242, "mapped", nil)
				}
				return jsonrpc.DefaultMapError(err)
			},
			MaxBatch:  2,
			OnConnect: func(*jsonrpc.Peer) { connected.Add(1) },
		},
		BaseContext: func(r *http.Request) context.Context {
			return context.WithValue(r.Context(), key{}, r.Header.Get("X-Secret"))
		},
	}
	hs := startServer(t, srv)
	cases := []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"fail"}`, `{"jsonrpc":"2.0","id":1,"error":{"code":4242,"message":"mapped"}}`},
		{`[{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]},{"jsonrpc":"2.0","id":2,"method":"add","params":[1,2]},{"jsonrpc":"2.0","id":3,"method":"add","params":[1,2]}]`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
	}
	for _, tc := range cases {
		resp, body := post(t, hs.URL, "application/json", tc.body)
		if resp.StatusCode != 200 || !sameJSON(t, body, tc.want) {
			t.Errorf("%s: %d %s, want %s", tc.body, resp.StatusCode, body, tc.want)
		}
	}
	req, _ := http.NewRequestWithContext(testCtx(t, wait), http.MethodPost, hs.URL,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"secret"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Secret", "s3")
	if _, body := do(t, req); body != `{"jsonrpc":"2.0","id":1,"result":"s3"}` {
		t.Errorf("secret: %s; want the value Server.BaseContext put in", body)
	}
	if n := connected.Load(); n != 3 {
		t.Errorf("OnConnect ran %d times for 3 requests", n)
	}
	if n := intercepted.Load(); n != 2 {
		t.Errorf("the interceptor saw %d inbound calls, want 2 (fail, secret)", n)
	}
}

// TestClientNoReplyToCall: a server that answers a call with 2xx and no
// body fails the Call with an error that says so, at once.
func TestClientNoReplyToCall(t *testing.T) {
	hs := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
	}))
	c := newClient(t, hs.URL, httprpc.ClientOptions{})
	err := c.Call(testCtx(t, wait), "add", []int{1, 2}, nil)
	if !errors.Is(err, jsonrpc.ErrClosed) || !strings.Contains(err.Error(), "no reply") {
		t.Fatalf("Call: %v; want an error saying the response held no reply", err)
	}
	if err := c.Notify(testCtx(t, wait), "add", []int{1, 2}); err != nil {
		t.Fatalf("Notify: %v; a notification wants no reply", err)
	}
}

// TestClientNetworkError: a server that is not there fails the call with
// the dial's error, at once.
func TestClientNetworkError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/"
	ln.Close()
	c := newClient(t, url, httprpc.ClientOptions{})
	err = c.Call(testCtx(t, wait), "add", []int{1, 2}, nil)
	var op *net.OpError
	if !errors.As(err, &op) {
		t.Fatalf("Call: %v; want a *net.OpError", err)
	}
	err = c.Batch(testCtx(t, wait), []jsonrpc.BatchElem{{Method: "add", Params: []int{1, 2}}})
	if !errors.As(err, &op) {
		t.Fatalf("Batch: %v; want a *net.OpError", err)
	}
}
