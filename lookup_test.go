package jsonrpc

import (
	"context"
	"testing"
)

// TestPeerHandlerAndMuxLookup: a Peer tells which Handler serves it (the
// one given, or the Mux it made), and a Mux what it routes a method to;
// topic.Follower checks with them that it is registered where the
// connection is served (issue 31.8).
func TestPeerHandlerAndMuxLookup(t *testing.T) {
	mux := NewMux()
	h := HandlerFunc(func(context.Context, *Request) (any, error) { return nil, nil })
	mux.Handle("m", h)
	if got := mux.Lookup("m"); got == nil {
		t.Fatal("Lookup(m) = nil, want the handler registered")
	}
	if got := mux.Lookup("other"); got != nil {
		t.Fatalf("Lookup(other) = %v, want nil", got)
	}
	var zero Mux
	if got := zero.Lookup("m"); got != nil {
		t.Fatalf("zero Mux Lookup = %v, want nil", got)
	}
	a, b := newPair(t, mux, nil, nil, nil)
	if got, ok := a.Handler().(*Mux); !ok || got != mux {
		t.Fatalf("Handler() = %v, want the Options.Handler", a.Handler())
	}
	if _, ok := b.Handler().(*Mux); !ok {
		t.Fatalf("Handler() of a Peer without one = %T, want the *Mux it made", b.Handler())
	}
}
