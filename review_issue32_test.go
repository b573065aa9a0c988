package jsonrpc

import (
	"context"
	"encoding/json"
	"net/netip"
	"testing"
)

// TestReviewTypedTextUnmarshalerStructParams: netip.Addr (a struct with
// only unexported fields and its own text form) as a Typed method's params
// can be called with nothing JSON-RPC allows: ["127.0.0.1"] is taken as
// positional fields ("want at most 0 positional params, got 1"), a bare
// "127.0.0.1" is no params, and an object is not its form. Typed looks for
// json.Unmarshaler only; an encoding.TextUnmarshaler struct should be a
// one-element array, as a TextUnmarshaler scalar is.
func TestReviewTypedTextUnmarshalerStructParams(t *testing.T) {
	m := NewMux()
	Register(m, "ping", func(_ context.Context, a netip.Addr) (string, error) { return a.String(), nil })
	a, b := Pipe()
	server := NewPeer(a, Options{Handler: m})
	client := NewPeer(b)
	defer func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	}()
	var got string
	err := client.Call(t.Context(), "ping", json.RawMessage(`["127.0.0.1"]`), &got)
	if err != nil || got != "127.0.0.1" {
		t.Errorf(`ping ["127.0.0.1"]: %q, %v; want "127.0.0.1"`, got, err)
	}
}
