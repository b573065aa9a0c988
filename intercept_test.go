package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// record is what a recording interceptor saw of one call.
type record struct {
	name     string
	outbound bool
	method   string
	id       string
	elapsed  time.Duration
	err      error
}

// recorder is an Interceptor that appends what it sees, and the order in
// which it entered and left, to a shared log.
type recorder struct {
	mu    *sync.Mutex // shared by the recorders that share log
	name  string
	log   *[]string
	calls []record
}

func (r *recorder) intercept(ctx context.Context, info *CallInfo, next Invoker) (any, error) {
	r.mu.Lock()
	*r.log = append(*r.log, r.name+" in "+info.Method)
	r.mu.Unlock()
	start := time.Now()
	res, err := next(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.log = append(*r.log, r.name+" out "+info.Method)
	r.calls = append(r.calls, record{r.name, info.Outbound, info.Method, info.ID.String(), time.Since(start), err})
	return res, err
}

func (r *recorder) seen() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// TestInterceptorsSeeEverything: one interceptor list wraps inbound
// handlers and outbound calls, notifications and batch elements, with the
// method, the id and the elapsed time at hand, composed outermost first.
func TestInterceptorsSeeEverything(t *testing.T) {
	var clientLog, serverLog []string
	var clientMu, serverMu sync.Mutex
	ca, cb := &recorder{mu: &clientMu, name: "a", log: &clientLog}, &recorder{mu: &clientMu, name: "b", log: &clientLog}
	srv := &recorder{mu: &serverMu, name: "s", log: &serverLog}
	notified := make(chan struct{}, 1)
	h := mux(t, map[string]HandlerFunc{
		"slow": func(ctx context.Context, req *Request) (any, error) {
			time.Sleep(20 * time.Millisecond)
			return "ok", nil
		},
		"note": func(ctx context.Context, req *Request) (any, error) { notified <- struct{}{}; return nil, nil },
	})
	client, _ := newPair(t, nil, h,
		&Options{Interceptors: []Interceptor{ca.intercept, cb.intercept}},
		&Options{Interceptors: []Interceptor{srv.intercept}})

	var s string
	if err := client.Call(testCtx(t, wait), "slow", nil, &s); err != nil || s != "ok" {
		t.Fatalf("Call = %q, %v", s, err)
	}
	clientMu.Lock()
	got := strings.Join(clientLog, ",")
	clientMu.Unlock()
	if want := "a in slow,b in slow,b out slow,a out slow"; got != want {
		t.Errorf("composition order: %s, want %s", got, want)
	}
	if err := client.Notify(testCtx(t, wait), "note", nil); err != nil {
		t.Fatal(err)
	}
	within(t, notified, "the notification")
	batch := []BatchElem{{Method: "slow"}, {Method: "nosuch"}, {Method: "note", Notification: true}}
	if err := client.Batch(testCtx(t, wait), batch); err != nil {
		t.Fatal(err)
	}
	within(t, notified, "the batch's notification")
	if errorCode(t, batch[1].Error) != CodeMethodNotFound || batch[0].Error != nil {
		t.Errorf("batch errors: %v, %v", batch[0].Error, batch[1].Error)
	}

	out := ca.seen()
	if len(out) != 5 {
		t.Fatalf("client interceptor saw %d calls, want 5: %+v", len(out), out)
	}
	if r := out[0]; !r.outbound || r.method != "slow" || r.id == "" || r.elapsed < 20*time.Millisecond {
		t.Errorf("outbound call record %+v", r)
	}
	if r := out[1]; r.method != "note" || r.id != "" {
		t.Errorf("outbound notification record %+v", r)
	}
	eventually(t, "server records", func() bool { return len(srv.seen()) == 5 })
	for _, r := range srv.seen() {
		if r.outbound {
			t.Errorf("server saw an outbound record %+v", r)
		}
		if r.method == "nosuch" && errorCode(t, r.err) != CodeMethodNotFound {
			t.Errorf("inbound nosuch: err %v", r.err)
		}
	}
}

// TestInterceptorRefuses: an inbound interceptor that does not call next
// refuses the call (a token check), and its error goes out as a handler's
// would; an outbound one keeps a batch element off the wire.
func TestInterceptorRefuses(t *testing.T) {
	errNoToken := &Error{Code: -32010, Message: "missing token"}
	needToken := func(ctx context.Context, info *CallInfo, next Invoker) (any, error) {
		if !strings.Contains(string(info.Params), `"token":"s3cret"`) {
			return nil, errNoToken
		}
		return next(ctx)
	}
	var served []string
	var mu sync.Mutex
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		mu.Lock()
		served = append(served, req.Method)
		mu.Unlock()
		return "done", nil
	})
	skipB := func(ctx context.Context, info *CallInfo, next Invoker) (any, error) {
		if info.Method == "b" {
			return nil, errors.New("not sent")
		}
		return next(ctx)
	}
	client, _ := newPair(t, nil, h, &Options{Interceptors: []Interceptor{skipB}}, &Options{Interceptors: []Interceptor{needToken}})

	err := client.Call(testCtx(t, wait), "a", map[string]string{}, nil)
	if !errors.Is(err, errNoToken) {
		t.Errorf("call without token: %v", err)
	}
	var res string
	if err := client.Call(testCtx(t, wait), "a", map[string]string{"token": "s3cret"}, &res); err != nil || res != "done" {
		t.Errorf("call with token: %q, %v", res, err)
	}
	tok := map[string]string{"token": "s3cret"}
	batch := []BatchElem{{Method: "b", Params: tok}, {Method: "c", Params: tok, Result: &res}}
	if err := client.Batch(testCtx(t, wait), batch); err != nil {
		t.Fatal(err)
	}
	if batch[0].Error == nil || batch[0].Error.Error() != "not sent" || batch[1].Error != nil {
		t.Errorf("batch: %v, %v", batch[0].Error, batch[1].Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(served) != "[a c]" {
		t.Errorf("served %v, want [a c]: b must not reach the wire", served)
	}
	// A batch whose every element is refused sends nothing and fails each.
	all := []BatchElem{{Method: "b"}, {Method: "b"}}
	if err := client.Batch(testCtx(t, wait), all); err != nil || all[0].Error == nil || all[1].Error == nil {
		t.Errorf("all refused: %v, %v, %v", err, all[0].Error, all[1].Error)
	}
}

// span and tracer stand for an OpenTelemetry-style tracer: a span per call,
// carried in ctx to the handler, ended with a status.
type span struct {
	name   string
	attrs  map[string]string
	status string
	ended  bool
}

type spanKey struct{}

type tracer struct {
	mu    sync.Mutex
	spans []*span
}

func (tr *tracer) intercept(ctx context.Context, info *CallInfo, next Invoker) (any, error) {
	kind := "server"
	if info.Outbound {
		kind = "client"
	}
	s := &span{name: "jsonrpc " + info.Method, attrs: map[string]string{"rpc.jsonrpc.request_id": info.ID.String(), "span.kind": kind}}
	tr.mu.Lock()
	tr.spans = append(tr.spans, s)
	tr.mu.Unlock()
	res, err := next(context.WithValue(ctx, spanKey{}, s))
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s.status, s.ended = "ok", true
	var e *Error
	if errors.As(err, &e) {
		s.status = fmt.Sprintf("error %d", e.Code)
	}
	return res, err
}

// counter stands for a Prometheus-style counter vector labelled by method
// and outcome code.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) intercept(ctx context.Context, info *CallInfo, next Invoker) (any, error) {
	res, err := next(ctx)
	code := "0"
	if err != nil {
		code = fmt.Sprint(DefaultMapError(err).Code)
	}
	c.mu.Lock()
	c.n[info.Method+" "+code]++
	c.mu.Unlock()
	return res, err
}

// TestTracingAndMetricsFit shows that a span per call (visible to the
// handler through ctx) and a counter by method and code fit through an
// Interceptor with no dependency in the core.
func TestTracingAndMetricsFit(t *testing.T) {
	tr := &tracer{}
	cnt := &counter{n: map[string]int{}}
	sawSpan := make(chan bool, 1)
	h := mux(t, map[string]HandlerFunc{
		"work": func(ctx context.Context, req *Request) (any, error) {
			_, ok := ctx.Value(spanKey{}).(*span)
			select {
			case sawSpan <- ok:
			default:
			}
			return 1, nil
		},
		"fail": func(ctx context.Context, req *Request) (any, error) { return nil, NewError(-32050, "nope", nil) },
	})
	client, _ := newPair(t, nil, h, nil, &Options{Interceptors: []Interceptor{tr.intercept, cnt.intercept}})
	for range 3 {
		client.Call(testCtx(t, wait), "work", nil, nil)
	}
	client.Call(testCtx(t, wait), "fail", nil, nil)
	if !within(t, sawSpan, "span in handler ctx") {
		t.Error("the handler did not see the span in its ctx")
	}
	eventually(t, "4 spans ended", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		n := 0
		for _, s := range tr.spans {
			if s.ended {
				n++
			}
		}
		return n == 4
	})
	tr.mu.Lock()
	last := tr.spans[3]
	tr.mu.Unlock()
	if last.status != "error -32050" || last.attrs["span.kind"] != "server" || last.attrs["rpc.jsonrpc.request_id"] != "4" {
		t.Errorf("last span %+v", last)
	}
	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	if cnt.n["work 0"] != 3 || cnt.n["fail -32050"] != 1 {
		t.Errorf("counters %v", cnt.n)
	}
}

// TestInterceptorRewritesParams: an outbound interceptor adds a token to
// every call's params, and what reaches the wire (and the handler) is the
// rewritten params; params that are no longer an object or array are
// refused without being sent.
func TestInterceptorRewritesParams(t *testing.T) {
	addToken := func(ctx context.Context, info *CallInfo, next Invoker) (any, error) {
		if info.Method == "broken" {
			info.Params = []byte(`"nope"`)
		} else {
			info.Params = []byte(`{"token":"s3cret"}`)
		}
		return next(ctx)
	}
	got := make(chan string, 4)
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		got <- req.Method + " " + string(req.Params)
		return nil, nil
	})
	client, _ := newPair(t, nil, h, &Options{Interceptors: []Interceptor{addToken}}, nil)
	if err := client.Call(testCtx(t, wait), "a", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := client.Notify(testCtx(t, wait), "b", []int{1}); err != nil {
		t.Fatal(err)
	}
	batch := []BatchElem{{Method: "c"}, {Method: "broken"}}
	if err := client.Batch(testCtx(t, wait), batch); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(batch[1].Error, ErrInvalidParams) || batch[0].Error != nil {
		t.Errorf("batch errors %v, %v", batch[0].Error, batch[1].Error)
	}
	if err := client.Call(testCtx(t, wait), "broken", nil, nil); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("Call with params rewritten to a string = %v, want ErrInvalidParams", err)
	}
	for _, want := range []string{`a {"token":"s3cret"}`, `b {"token":"s3cret"}`, `c {"token":"s3cret"}`} {
		if g := within(t, got, want); g != want {
			t.Errorf("handler got %s, want %s", g, want)
		}
	}
	select {
	case g := <-got:
		t.Errorf("unexpected request reached the handler: %s", g)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestInterceptedBatchCtxEndsBeforeArrival: the elements that reached the
// wire go out without waiting for one an interceptor holds back; when the
// batch's ctx ends before that one arrives, it is refused with ctx's error
// and never sent, and no element is left pending (counting against
// MaxPending, never cancelled).
func TestInterceptedBatchCtxEndsBeforeArrival(t *testing.T) {
	slow := func(ctx context.Context, info *CallInfo, next Invoker) (any, error) {
		if info.Method == "slow" {
			time.Sleep(100 * time.Millisecond)
		}
		return next(ctx)
	}
	var served atomic.Int64
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		served.Add(1)
		return 1, nil
	})
	client, _ := newPair(t, nil, h, &Options{Interceptors: []Interceptor{slow}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	elems := []BatchElem{{Method: "fast"}, {Method: "slow"}, {Method: "fast"}}
	err := client.Batch(ctx, elems)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Batch = %v, want context.DeadlineExceeded", err)
	}
	if elems[0].Error != nil || elems[2].Error != nil || !errors.Is(elems[1].Error, context.DeadlineExceeded) {
		t.Errorf("elements' errors: %v, %v, %v; want nil, DeadlineExceeded, nil", elems[0].Error, elems[1].Error, elems[2].Error)
	}
	if n := client.pending.len(); n != 0 {
		t.Errorf("%d calls left pending", n)
	}
	var res int
	if err := client.Call(testCtx(t, wait), "after", nil, &res); err != nil || res != 1 {
		t.Fatalf("Call after = %d, %v", res, err)
	}
	if n := served.Load(); n != 3 {
		t.Errorf("server served %d requests, want 3 (the fast elements and the later call)", n)
	}
}

// TestBatchUnderConcurrencyLimit pins issue 9's finding 4: an outbound
// Batch under an interceptor that limits concurrency (here one slot)
// deadlocked until its ctx ended, each element's next waiting for all its
// siblings to reach next while the sibling waited for the slot. The
// elements that reach the wire now go without those held back, in rounds.
func TestBatchUnderConcurrencyLimit(t *testing.T) {
	sem := make(chan struct{}, 1)
	limit := func(ctx context.Context, info *CallInfo, next Invoker) (any, error) {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-sem }()
		return next(ctx)
	}
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) { return req.Method, nil })
	client, _ := newPair(t, nil, h, &Options{Interceptors: []Interceptor{limit}}, nil)
	var a, b string
	elems := []BatchElem{{Method: "a", Result: &a}, {Method: "b", Result: &b}, {Method: "n", Notification: true}}
	start := time.Now()
	if err := client.Batch(testCtx(t, wait), elems); err != nil {
		t.Fatalf("Batch = %v after %v", err, time.Since(start))
	}
	if a != "a" || b != "b" || elems[0].Error != nil || elems[1].Error != nil || elems[2].Error != nil {
		t.Errorf("results %q %q, errors %v %v %v", a, b, elems[0].Error, elems[1].Error, elems[2].Error)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Batch took %v", d)
	}
}

// TestNilInterceptorsSkipped: nil entries in Options.Interceptors are
// skipped, the others still run in order, and a Peer whose entries are all
// nil takes the path of a Peer with none (an interceptor chain costs five
// or more allocations a round trip; this one costs under two more than
// none, the margin for the pools' noise).
func TestNilInterceptorsSkipped(t *testing.T) {
	var mu sync.Mutex
	var log []string
	rec := &recorder{mu: &mu, name: "a", log: &log}
	h := mux(t, map[string]HandlerFunc{"add": func(context.Context, *Request) (any, error) { return 3, nil }})
	c, _ := newPair(t, nil, h, &Options{Interceptors: []Interceptor{nil, rec.intercept, nil}}, nil)
	if err := c.Call(context.Background(), "add", []int{1, 2}, nil); err != nil {
		t.Fatal(err)
	}
	if got := rec.seen(); len(got) != 1 || got[0].method != "add" || !got[0].outbound {
		t.Errorf("the interceptor among nils saw %+v, want the one call", got)
	}
	allocs := func(o *Options) float64 {
		c, _ := newPair(t, nil, h, o, &Options{Interceptors: o.Interceptors})
		var sum int
		return testing.AllocsPerRun(200, func() {
			if err := c.Call(context.Background(), "add", []int{1, 2}, &sum); err != nil {
				t.Fatal(err)
			}
		})
	}
	bare, nils := allocs(&Options{}), allocs(&Options{Interceptors: []Interceptor{nil, nil}})
	if nils >= bare+2 {
		t.Errorf("a round trip with only nil interceptors made %v allocations, one with none %v", nils, bare)
	}
}
