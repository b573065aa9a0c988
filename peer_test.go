package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestBothSidesCallConcurrently has each Peer call the other at the same
// time, many calls in flight in both directions.
func TestBothSidesCallConcurrently(t *testing.T) {
	name := func(n string) HandlerFunc {
		return func(_ context.Context, req *Request) (any, error) {
			var x []int
			if err := json.Unmarshal(req.Params, &x); err != nil {
				return nil, err
			}
			return fmt.Sprintf("%s%d", n, x[0]), nil
		}
	}
	a, b := newPair(t, mux(t, map[string]HandlerFunc{"who": name("a")}),
		mux(t, map[string]HandlerFunc{"who": name("b")}), nil, nil)
	ctx := testCtx(t, wait)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 100 {
		for _, c := range []struct {
			from *Peer
			want string
		}{{a, "b"}, {b, "a"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var got string
				if err := c.from.Call(ctx, "who", []int{i}, &got); err != nil {
					errs <- err
				} else if want := fmt.Sprint(c.want, i); got != want {
					errs <- fmt.Errorf("got %q, want %q", got, want)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestErrorsOverTheWire checks what a caller sees of each kind of handler
// failure.
func TestErrorsOverTheWire(t *testing.T) {
	secret := errors.New("secret: db password is hunter2")
	var served atomic.Int64
	h := mux(t, map[string]HandlerFunc{
		"app": func(context.Context, *Request) (any, error) {
			return nil, NewError(42, "app failed", map[string]any{"k": "v", "n": 1})
		},
		"wrapped": func(context.Context, *Request) (any, error) {
			return nil, fmt.Errorf("context: %w", NewError(7, "inner", nil))
		},
		"plain": func(context.Context, *Request) (any, error) { return nil, secret },
		"panic": func(context.Context, *Request) (any, error) { panic(secret) },
		"unmarshalable": func(context.Context, *Request) (any, error) {
			return func() {}, nil
		},
		"ok": func(context.Context, *Request) (any, error) { served.Add(1); return "fine", nil },
	})
	a, _ := newPair(t, nil, h, nil, nil)
	ctx := testCtx(t, wait)
	for _, tc := range []struct {
		method string
		code   int64
		msg    string
		data   string // JSON, "" for none
	}{
		{"app", 42, "app failed", `{"k":"v","n":1}`},
		{"wrapped", 7, "inner", ""},
		{"plain", CodeInternalError, "Internal error", ""},
		{"panic", CodeInternalError, "Internal error", ""},
		{"unmarshalable", CodeInternalError, "Internal error", ""},
		{"missing", CodeMethodNotFound, "Method not found", ""},
	} {
		err := a.Call(ctx, tc.method, nil, nil)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: got %v, want an *Error", tc.method, err)
		}
		if e.Code != tc.code || e.Message != tc.msg {
			t.Errorf("%s: got code %d message %q, want %d %q", tc.method, e.Code, e.Message, tc.code, tc.msg)
		}
		if tc.data == "" && len(e.Data) != 0 {
			t.Errorf("%s: unexpected data %s", tc.method, e.Data)
		} else if tc.data != "" {
			assertJSON(t, e.Data, tc.data)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: internal error text leaked: %v", tc.method, err)
		}
		if !errors.Is(err, &Error{Code: tc.code}) {
			t.Errorf("%s: errors.Is by code failed", tc.method)
		}
		// The Peer keeps serving after each failure.
		var got string
		if err := a.Call(ctx, "ok", nil, &got); err != nil || got != "fine" {
			t.Fatalf("after %s: %q, %v", tc.method, got, err)
		}
	}
	if served.Load() != 6 {
		t.Errorf("ok served %d times, want 6", served.Load())
	}
}

func TestMapErrorOption(t *testing.T) {
	errNotFound := errors.New("not found")
	opts := &Options{MapError: func(err error) *Error {
		switch {
		case errors.Is(err, errNotFound):
			return NewError(404, "no such thing", "detail")
		case strings.Contains(err.Error(), "nil"):
			return nil // a nil mapping falls back to Internal error
		}
		return DefaultMapError(err)
	}}
	h := mux(t, map[string]HandlerFunc{
		"find":  func(context.Context, *Request) (any, error) { return nil, fmt.Errorf("find: %w", errNotFound) },
		"nil":   func(context.Context, *Request) (any, error) { return nil, errors.New("map me to nil") },
		"other": func(context.Context, *Request) (any, error) { return nil, errors.New("other") },
		"app":   func(context.Context, *Request) (any, error) { return nil, NewError(5, "five", nil) },
	})
	a, _ := newPair(t, nil, h, nil, opts)
	ctx := testCtx(t, wait)
	for method, want := range map[string]int64{"find": 404, "nil": CodeInternalError, "other": CodeInternalError, "app": 5} {
		err := a.Call(ctx, method, nil, nil)
		if got := errorCode(t, err); got != want {
			t.Errorf("%s: code %d, want %d", method, got, want)
		}
	}
	var e *Error
	if errors.As(a.Call(ctx, "find", nil, nil), &e); string(e.Data) != `"detail"` {
		t.Errorf("mapped error data %s", e.Data)
	}
}

// TestHandlerCallsBackAndPushes has a handler call the remote side back
// and notify it, through PeerFromContext.
func TestHandlerCallsBackAndPushes(t *testing.T) {
	pushed := make(chan string, 10)
	var aPeer atomic.Pointer[Peer]
	clientMux := mux(t, map[string]HandlerFunc{
		"ask": func(ctx context.Context, req *Request) (any, error) {
			if PeerFromContext(ctx) != aPeer.Load() {
				return nil, errors.New("PeerFromContext is not the serving Peer")
			}
			return "answer", nil
		},
		"progress": func(_ context.Context, req *Request) (any, error) {
			pushed <- string(req.Params)
			return nil, nil
		},
	})
	serverMux := mux(t, map[string]HandlerFunc{
		"work": func(ctx context.Context, req *Request) (any, error) {
			p := PeerFromContext(ctx)
			if p == nil {
				return nil, errors.New("no Peer in ctx")
			}
			if err := p.Notify(ctx, "progress", []int{50}); err != nil {
				return nil, err
			}
			var answer string
			if err := p.Call(ctx, "ask", nil, &answer); err != nil {
				return nil, err
			}
			return "got " + answer, nil
		},
	})
	a, _ := newPair(t, clientMux, serverMux, nil, nil)
	aPeer.Store(a)
	var got string
	if err := a.Call(testCtx(t, wait), "work", nil, &got); err != nil || got != "got answer" {
		t.Fatalf("work: %q, %v", got, err)
	}
	select {
	case p := <-pushed:
		if p != "[50]" {
			t.Errorf("pushed %s", p)
		}
	case <-testCtx(t, wait).Done():
		t.Fatal("no progress notification")
	}
	if PeerFromContext(context.Background()) != nil {
		t.Error("PeerFromContext of a foreign ctx is not nil")
	}
}

// hop calls "hop" back on the remote side with depth n-1 until n is 0, and
// returns the number of hops below it.
func hop(ctx context.Context, n int) (int, error) {
	if n == 0 {
		return 0, nil
	}
	var below int
	if err := PeerFromContext(ctx).Call(ctx, "hop", []int{n - 1}, &below); err != nil {
		return 0, err
	}
	return below + 1, nil
}

// TestNestedCallbacksSaturatedPool is the regression test for a deadlock:
// with MaxConcurrent 1 on both sides, a handler waiting for its callback to
// the remote held the only slot, so the remote's nested call back into this
// Peer could never run.
func TestNestedCallbacksSaturatedPool(t *testing.T) {
	m := NewMux()
	Register(m, "hop", hop)
	opts := &Options{MaxConcurrent: 1}
	a, b := newPair(t, m, m, opts, opts)
	t.Run("depth 4", func(t *testing.T) {
		var got int
		if err := a.Call(testCtx(t, wait), "hop", []int{4}, &got); err != nil || got != 4 {
			t.Fatalf("A→B→A→B→A: %d, %v", got, err)
		}
	})
	t.Run("batch of chains", func(t *testing.T) {
		got := make([]int, 3)
		elems := make([]BatchElem, 3)
		for i := range elems {
			elems[i] = BatchElem{Method: "hop", Params: []int{3}, Result: &got[i]}
		}
		if err := a.Batch(testCtx(t, wait), elems); err != nil {
			t.Fatal(err)
		}
		for i, e := range elems {
			if e.Error != nil || got[i] != 3 {
				t.Errorf("element %d: %d, %v", i, got[i], e.Error)
			}
		}
	})
	t.Run("chains from both sides at once", func(t *testing.T) {
		ctx := testCtx(t, wait)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			from := []*Peer{a, b}[i%2]
			wg.Add(1)
			go func() {
				defer wg.Done()
				var got int
				if err := from.Call(ctx, "hop", []int{6}, &got); err != nil || got != 6 {
					errs <- fmt.Errorf("chain %d: %d, %v", i, got, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}
