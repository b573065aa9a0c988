package jsonrpc

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// TestAfterReplyRunsOnceTheReplyLeft: a function a call's handler gives
// AfterReply runs once its reply has left the handler (here: written, the
// remote side having read it), not while the reply waits for the
// connection; a notification's ctx, or a call whose reply has left, take
// none; a batch element's runs once the element is done.
func TestAfterReplyRunsOnceTheReplyLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran, noted atomic.Int32
		ctxs := make(chan context.Context, 3)
		mux := NewMux()
		mux.HandleFunc("call", func(ctx context.Context, _ *Request) (any, error) {
			if !AfterReply(ctx, func() { ran.Add(1) }) {
				t.Error("AfterReply refused a call's ctx")
			}
			ctxs <- ctx
			return "ok", nil
		})
		mux.HandleFunc("note", func(ctx context.Context, _ *Request) (any, error) {
			if AfterReply(ctx, func() {}) {
				noted.Add(1)
			}
			return nil, nil
		})
		a, b := Pipe()
		p := NewPeer(a, Options{Handler: mux})
		defer func() { b.Close(); p.Wait() }()
		if err := b.Write([]byte(`{"jsonrpc":"2.0","method":"note"}`)); err != nil {
			t.Fatal(err)
		}
		if err := b.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"call"}`)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the reply waits: nobody reads b
		if n := ran.Load(); n != 0 {
			t.Fatalf("ran %d times while the reply waited for the connection", n)
		}
		if _, err := b.Read(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := ran.Load(); n != 1 {
			t.Fatalf("ran %d times once the reply was written, want 1", n)
		}
		if AfterReply(<-ctxs, func() { t.Error("ran after the reply had left") }) {
			t.Error("AfterReply took a function after the reply had left")
		}
		if noted.Load() != 0 {
			t.Error("AfterReply took a notification's ctx")
		}

		// A batch element's: once the element is done, before the
		// batch's reply array is written.
		if err := b.Write([]byte(`[{"jsonrpc":"2.0","id":2,"method":"call"},{"jsonrpc":"2.0","id":3,"method":"call"}]`)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := ran.Load(); n != 3 {
			t.Fatalf("ran %d times in all after a batch of two calls, unread, want 3", n)
		}
		if _, err := b.Read(); err != nil {
			t.Fatal(err)
		}
	})
}
