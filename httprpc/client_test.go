package httprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// newClient is a Client of hs with its own http.Client.
func newClient(t testing.TB, url string, o httprpc.ClientOptions) *httprpc.Client {
	if o.HTTPClient == nil {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		o.HTTPClient = &http.Client{Transport: tr}
	}
	return httprpc.NewClient(url, o)
}

// TestClientCall: a call's result, an application error's code, message
// and data, and Method not found, through a Server on loopback.
func TestClientCall(t *testing.T) {
	hs := startServer(t, newServer())
	c := newClient(t, hs.URL, httprpc.ClientOptions{})
	ctx := testCtx(t, wait)
	var sum int
	if err := c.Call(ctx, "add", []int{1, 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("add: %d, %v; want 3, nil", sum, err)
	}
	err := c.Call(ctx, "fail", nil, nil)
	var e *jsonrpc.Error
	if !errors.As(err, &e) || e.Code != 42 || e.Message != "boom" || string(e.Data) != `{"n":7}` {
		t.Fatalf("fail: %v; want *jsonrpc.Error 42 boom {\"n\":7}", err)
	}
	if err := c.Call(ctx, "nope", nil, nil); !errors.Is(err, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "", nil)) {
		t.Fatalf("nope: %v; want Method not found", err)
	}
	if err := c.Call(ctx, "add", 3, nil); !errors.Is(err, jsonrpc.ErrInvalidParams) {
		t.Fatalf("params 3: %v; want ErrInvalidParams before anything is sent", err)
	}
}

// TestClientNotifyReachesHandler: Notify returns once the server has run
// the notification's handler (the Server answers 202 after it).
func TestClientNotifyReachesHandler(t *testing.T) {
	var got atomic.Int64
	m := jsonrpc.NewMux()
	jsonrpc.RegisterNotification(m, "tick", func(_ context.Context, p [1]int64) error {
		got.Add(p[0])
		return nil
	})
	hs := startServer(t, &httprpc.Server{Peer: jsonrpc.Options{Handler: m}})
	c := newClient(t, hs.URL, httprpc.ClientOptions{})
	for i := range 3 {
		if err := c.Notify(testCtx(t, wait), "tick", []int64{int64(i + 1)}); err != nil {
			t.Fatalf("Notify: %v", err)
		}
	}
	if n := got.Load(); n != 6 {
		t.Fatalf("the handler counted %d, want 6", n)
	}
}

// TestClientBatchByID: a batch's results reach their elements by id (the
// server answers the slow element last), notifications in it get nothing,
// errors stay per element.
func TestClientBatchByID(t *testing.T) {
	hs := startServer(t, newServer())
	c := newClient(t, hs.URL, httprpc.ClientOptions{})
	var slow, fast, sum int
	elems := []jsonrpc.BatchElem{
		{Method: "sleep", Params: []int{50}, Result: &slow},
		{Method: "sleep", Params: []int{1}, Result: &fast},
		{Method: "note", Params: struct{}{}, Notification: true},
		{Method: "fail"},
		{Method: "add", Params: []int{20, 22}, Result: &sum},
	}
	if err := c.Batch(testCtx(t, wait), elems); err != nil {
		t.Fatalf("Batch: %v", err)
	}
	if slow != 50 || fast != 1 || sum != 42 {
		t.Fatalf("results slow %d fast %d sum %d; want 50 1 42", slow, fast, sum)
	}
	for i, want := range []int64{0, 0, 0, 42, 0} {
		var e *jsonrpc.Error
		switch {
		case want == 0 && elems[i].Error != nil:
			t.Errorf("element %d: %v", i, elems[i].Error)
		case want != 0 && (!errors.As(elems[i].Error, &e) || e.Code != want):
			t.Errorf("element %d: %v, want code %d", i, elems[i].Error, want)
		}
	}
	notes := []jsonrpc.BatchElem{{Method: "note", Notification: true}, {Method: "note", Notification: true}}
	if err := c.Batch(testCtx(t, wait), notes); err != nil {
		t.Fatalf("a batch of notifications: %v", err)
	}
}

// TestClientStatusError: a status other than 2xx fails the call with an
// error wrapping a *StatusError that has the code and the body's start.
func TestClientStatusError(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/rpc", newServer())
	mux.HandleFunc("/teapot", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "short and stout", http.StatusTeapot)
	})
	hs := startServer(t, mux)
	cases := []struct {
		path, method string
		notify       bool
		code         int
		body         string
	}{
		{"/teapot", "add", false, 418, "short and stout\n"},
		{"/teapot", "add", true, 418, "short and stout\n"},
		{"/missing", "add", false, 404, "404 page not found\n"},
	}
	for _, tc := range cases {
		c := newClient(t, hs.URL+tc.path, httprpc.ClientOptions{})
		var err error
		if tc.notify {
			err = c.Notify(testCtx(t, wait), tc.method, nil)
		} else {
			err = c.Call(testCtx(t, wait), tc.method, []int{1, 2}, nil)
		}
		var se *httprpc.StatusError
		if !errors.As(err, &se) || se.Code != tc.code || string(se.Body) != tc.body {
			t.Errorf("%s %s: %v; want a StatusError %d %q", tc.path, tc.method, err, tc.code, tc.body)
		}
	}
	// A batch fails as a whole; its elements stay unanswered, as a
	// Peer's Batch cut short leaves them.
	c := newClient(t, hs.URL+"/teapot", httprpc.ClientOptions{})
	elems := []jsonrpc.BatchElem{{Method: "add", Params: []int{1, 2}}, {Method: "add", Params: []int{3, 4}}}
	err := c.Batch(testCtx(t, wait), elems)
	var se *httprpc.StatusError
	if !errors.As(err, &se) || se.Code != 418 {
		t.Fatalf("Batch: %v; want a StatusError 418", err)
	}
	for i, el := range elems {
		if el.Error != nil {
			t.Errorf("element %d: %v; want it unanswered", i, el.Error)
		}
	}
}

// TestClientCancelReachesHandler: when the client's ctx ends, the POST is
// aborted and the handler's ctx on the server is cancelled.
func TestClientCancelReachesHandler(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan error, 1)
	m := jsonrpc.NewMux()
	m.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		close(started)
		select {
		case <-ctx.Done():
			cancelled <- ctx.Err()
		case <-time.After(wait):
			cancelled <- errors.New("the handler's ctx was not cancelled")
		}
		return nil, ctx.Err()
	})
	hs := startServer(t, &httprpc.Server{Peer: jsonrpc.Options{Handler: m}})
	c := newClient(t, hs.URL, httprpc.ClientOptions{})
	ctx, cancel := context.WithCancel(testCtx(t, wait))
	go func() {
		<-started
		cancel()
	}()
	t0 := time.Now()
	err := c.Call(ctx, "block", nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Call: %v; want context.Canceled", err)
	}
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > wait/2 {
		t.Fatalf("cancellation took %v", d)
	}
}

type userKey struct{}

// TestBaseContextFromMiddleware: what HTTP middleware puts in the
// request's context reaches the handler's ctx; a request the middleware
// refuses never reaches the Server.
func TestBaseContextFromMiddleware(t *testing.T) {
	m := jsonrpc.NewMux()
	m.HandleFunc("whoami", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		u, _ := ctx.Value(userKey{}).(string)
		return u, nil
	})
	srv := &httprpc.Server{Peer: jsonrpc.Options{Handler: m}}
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		srv.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
	hs := startServer(t, auth)
	c := newClient(t, hs.URL, httprpc.ClientOptions{Header: http.Header{"Authorization": {"Bearer ada"}}})
	var who string
	if err := c.Call(testCtx(t, wait), "whoami", nil, &who); err != nil || who != "ada" {
		t.Fatalf("whoami: %q, %v; want ada", who, err)
	}
	anon := newClient(t, hs.URL, httprpc.ClientOptions{})
	var se *httprpc.StatusError
	if err := anon.Call(testCtx(t, wait), "whoami", nil, &who); !errors.As(err, &se) || se.Code != 401 {
		t.Fatalf("without a token: %v; want a StatusError 401", err)
	}
}

// TestHandlerCallbackFailsAtOnce: a handler's Call, Notify and Batch to the
// client fail at once with ErrNoCallbacks, and what a handler tries to send
// never reaches the body, which holds the reply only.
func TestHandlerCallbackFailsAtOnce(t *testing.T) {
	m := jsonrpc.NewMux()
	m.HandleFunc("callback", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		p := jsonrpc.PeerFromContext(ctx)
		var errs []string
		for _, err := range []error{
			p.Call(ctx, "client.method", nil, nil),
			p.Notify(ctx, "client.note", []int{1}),
			p.Batch(ctx, []jsonrpc.BatchElem{{Method: "x"}, {Method: "y", Notification: true}}),
			jsonrpc.ReportProgress(ctx, map[string]int{"done": 1}),
		} {
			switch {
			case err == nil:
				errs = append(errs, "nil")
			case errors.Is(err, httprpc.ErrNoCallbacks):
				errs = append(errs, "refused")
			default:
				errs = append(errs, err.Error())
			}
		}
		return errs, nil
	})
	hs := startServer(t, &httprpc.Server{Peer: jsonrpc.Options{Handler: m, Progress: jsonrpc.MCPProgress}})
	t0 := time.Now()
	resp, body := post(t, hs.URL, "application/json",
		`{"jsonrpc":"2.0","id":1,"method":"callback","params":{"_meta":{"progressToken":"p1"}}}`)
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("took %v: the callbacks did not fail at once", d)
	}
	// The Batch: its element x is refused; the Batch itself returns nil,
	// as a Peer's does when its elements carry their errors.
	want := `{"jsonrpc":"2.0","id":1,"result":["refused","refused","nil","nil"]}`
	if resp.StatusCode != 200 || body != want {
		t.Fatalf("got %d %s\nwant 200 %s", resp.StatusCode, body, want)
	}
}

// TestClientConcurrentCalls: many goroutines share one Client, each gets
// its own result, over the keep-alive connections of one http.Client.
func TestClientConcurrentCalls(t *testing.T) {
	hs := startServer(t, newServer())
	c := newClient(t, hs.URL, httprpc.ClientOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, 32*20)
	for g := range 32 {
		wg.Go(func() {
			for i := range 20 {
				var sum int
				if err := c.Call(testCtx(t, wait), "add", []int{g, i}, &sum); err != nil || sum != g+i {
					errs <- errors.Join(err, errors.New("wrong sum"))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestClientMaxMessageSize: a request over the cap fails before it is
// sent, and a reply over it fails the call, both with ErrMessageTooLarge.
func TestClientMaxMessageSize(t *testing.T) {
	hs := startServer(t, newServer())
	c := newClient(t, hs.URL, httprpc.ClientOptions{MaxMessageSize: 200})
	big := strings.Repeat("x", 300)
	if err := c.Call(testCtx(t, wait), "echo", []string{big}, nil); !errors.Is(err, jsonrpc.ErrMessageTooLarge) {
		t.Fatalf("a request of 300 bytes: %v; want ErrMessageTooLarge", err)
	}
	c = newClient(t, hs.URL, httprpc.ClientOptions{MaxMessageSize: 100})
	err := c.Call(testCtx(t, wait), "echo", []string{strings.Repeat("y", 60)}, nil)
	if !errors.Is(err, jsonrpc.ErrMessageTooLarge) {
		t.Fatalf("a reply over 100 bytes: %v; want ErrMessageTooLarge", err)
	}
	var out []string
	if err := c.Call(testCtx(t, wait), "echo", []string{"ok"}, &out); err != nil || len(out) != 1 {
		t.Fatalf("a small echo after: %v %v", out, err)
	}
}

// TestClientInterceptors: ClientOptions.Peer's interceptors see every
// outbound call, and may rewrite its params.
func TestClientInterceptors(t *testing.T) {
	hs := startServer(t, newServer())
	var seen []string
	var mu sync.Mutex
	ic := func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		mu.Lock()
		seen = append(seen, info.Method)
		mu.Unlock()
		if info.Method == "add" {
			info.Params = json.RawMessage(`[40,2]`)
		}
		return next(ctx)
	}
	c := newClient(t, hs.URL, httprpc.ClientOptions{Peer: jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{ic}}})
	var sum int
	if err := c.Call(testCtx(t, wait), "add", []int{1, 1}, &sum); err != nil || sum != 42 {
		t.Fatalf("add: %d %v; want 42 from the rewritten params", sum, err)
	}
	if err := c.Notify(testCtx(t, wait), "note", struct{}{}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "add,note" {
		t.Fatalf("interceptor saw %v", seen)
	}
}
