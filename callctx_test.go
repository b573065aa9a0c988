package jsonrpc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCallCtxCancelledLazily pins what a call's handler ctx does now that
// its cancellable context is made on first need (callctx.go): a cancel
// notification reaches a handler that never asked for Done (Err reports
// it), and one that asks only after it (Done is closed at once); Cause,
// AfterFunc and a ctx derived from it see the cancellation; values of the
// Peer's base ctx are found; and the ctx ends once the handler returns.
func TestCallCtxCancelledLazily(t *testing.T) {
	type seen struct {
		errBefore, errAfter, cause, derived error
		doneClosed, afterFunc               bool
		value                               any
	}
	type ctxKey struct{}
	entered := make(chan struct{}, 1)
	got := make(chan seen, 1)
	kept := make(chan context.Context, 1)
	h := mux(t, map[string]HandlerFunc{
		"poll": func(ctx context.Context, _ *Request) (any, error) {
			var s seen
			s.errBefore = ctx.Err()
			entered <- struct{}{}
			deadline := time.Now().Add(wait)
			for ctx.Err() == nil && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond) // never ctx.Done: the lazy path
			}
			s.errAfter = ctx.Err()
			select {
			case <-ctx.Done():
				s.doneClosed = true
			default:
			}
			s.cause = context.Cause(ctx)
			fired := make(chan struct{})
			context.AfterFunc(ctx, func() { close(fired) })
			select {
			case <-fired:
				s.afterFunc = true
			case <-time.After(wait):
			}
			d, cancel := context.WithCancel(ctx)
			defer cancel()
			<-d.Done()
			s.derived = d.Err()
			s.value = ctx.Value(ctxKey{})
			got <- s
			return nil, ctx.Err()
		},
		"keep": func(ctx context.Context, _ *Request) (any, error) {
			kept <- ctx
			return "ok", nil
		},
	})
	base := context.WithValue(context.Background(), ctxKey{}, "base value")
	o := *lsp
	o.BaseContext = base
	_, r := newRaw(t, h, &o)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"poll"}`)
	within(t, entered, "the handler")
	r.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`)
	assertJSON(t, r.recv(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Request cancelled"}}`)
	s := <-got
	if s.errBefore != nil {
		t.Errorf("Err before the cancel = %v, want nil", s.errBefore)
	}
	for name, err := range map[string]error{"Err": s.errAfter, "Cause": s.cause, "a derived ctx's Err": s.derived} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s after the cancel = %v, want context.Canceled", name, err)
		}
	}
	if !s.doneClosed || !s.afterFunc {
		t.Errorf("after the cancel: Done closed %v, AfterFunc ran %v; want both", s.doneClosed, s.afterFunc)
	}
	if s.value != "base value" {
		t.Errorf("Value of the base ctx's key = %v", s.value)
	}

	r.call(`{"jsonrpc":"2.0","id":2,"method":"keep"}`)
	ctx := <-kept
	select {
	case <-ctx.Done():
	case <-time.After(wait):
		t.Fatal("a call's ctx still open after its handler returned")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("Err after the handler returned = %v", ctx.Err())
	}
}

// TestCallCtxValueStaysLazy pins that looking up a value in a call's
// handler ctx (a span, as an interceptor or a log handler does; a user's
// key) neither allocates nor makes the cancellable ctx, and still finds
// the base ctx's values, a *int key's included (the context package's own
// lookup takes that path); a cancellation after it is still seen.
func TestCallCtxValueStaysLazy(t *testing.T) {
	type ctxKey struct{}
	intKey := new(int)
	type seen struct {
		allocs        float64
		lazy          bool
		value, intVal any
		err           error
	}
	entered := make(chan struct{}, 1)
	got := make(chan seen, 1)
	h := mux(t, map[string]HandlerFunc{
		"look": func(ctx context.Context, _ *Request) (any, error) {
			var s seen
			s.allocs = testing.AllocsPerRun(100, func() { s.value = ctx.Value(ctxKey{}) })
			hc := ctx.Value(handlerKey{}).(*handlerCtx)
			hc.cmu.Lock()
			s.lazy = hc.cctx == nil
			hc.cmu.Unlock()
			s.intVal = ctx.Value(intKey)
			entered <- struct{}{}
			deadline := time.Now().Add(wait)
			for ctx.Err() == nil && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			s.err = ctx.Err()
			got <- s
			return nil, ctx.Err()
		},
	})
	base := context.WithValue(context.WithValue(context.Background(), ctxKey{}, "base value"), intKey, "int key")
	o := *lsp
	o.BaseContext = base
	_, r := newRaw(t, h, &o)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"look"}`)
	within(t, entered, "the handler")
	r.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`)
	assertJSON(t, r.recv(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Request cancelled"}}`)
	s := <-got
	if s.allocs != 0 || !s.lazy {
		t.Errorf("Value of a user's key: %v allocations, cancellable ctx still unmade %v; want 0 and true", s.allocs, s.lazy)
	}
	if s.value != "base value" || s.intVal != "int key" {
		t.Errorf("values found: %v and %v; want the base ctx's", s.value, s.intVal)
	}
	if !errors.Is(s.err, context.Canceled) {
		t.Errorf("Err after the cancel = %v, want context.Canceled", s.err)
	}
}
