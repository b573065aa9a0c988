//go:build !js

package ws_test

import (
	"errors"
	"testing"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// TestRawWire speaks to a Server with a plain coder/websocket client, one
// JSON-RPC message per text frame, using examples from the specification.
func TestRawWire(t *testing.T) {
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}}, nil)
	c := ts.rawDial(t, nil)
	ts.nextPeer(t)

	for _, tc := range []struct{ name, send, want string }{
		{"call", `{"jsonrpc":"2.0","method":"echo","params":[42,23],"id":1}`,
			`{"jsonrpc":"2.0","result":[42,23],"id":1}`},
		{"empty batch", `[]`,
			`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`},
		{"invalid batch", `[1,2,3]`,
			`[{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null},
			  {"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null},
			  {"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}]`},
		{"invalid JSON", `{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]`,
			`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`},
		{"invalid request object", `{"jsonrpc":"2.0","method":1,"params":"bar"}`,
			`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`},
		{"unknown method", `{"jsonrpc":"2.0","method":"foobar","id":"1"}`,
			`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"1"}`},
		{"mixed batch", `[{"jsonrpc":"2.0","method":"echo","params":[1],"id":"a"},
			{"jsonrpc":"2.0","method":"echo","params":[2]},
			{"foo":"boo"},
			{"jsonrpc":"2.0","method":"fail","id":"b"}]`,
			`[{"jsonrpc":"2.0","result":[1],"id":"a"},
			  {"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null},
			  {"jsonrpc":"2.0","error":{"code":42,"message":"boom"},"id":"b"}]`},
	} {
		writeRaw(t, c, tc.send)
		typ, got, err := readRaw(t, c)
		if err != nil {
			t.Fatalf("%s: read: %v", tc.name, err)
		}
		if typ != websocket.MessageText {
			t.Errorf("%s: reply sent as %v, want a text message", tc.name, typ)
		}
		if !sameReply(t, got, []byte(tc.want)) {
			t.Errorf("%s:\n got  %s\n want %s", tc.name, got, tc.want)
		}
	}

	// Notifications, alone or in a batch, get no reply at all: the next
	// message is the reply to the call sent after them.
	writeRaw(t, c, `{"jsonrpc":"2.0","method":"echo","params":[1]}`)
	writeRaw(t, c, `[{"jsonrpc":"2.0","method":"echo","params":[2]},{"jsonrpc":"2.0","method":"nope"}]`)
	writeRaw(t, c, `{"jsonrpc":"2.0","method":"echo","params":["last"],"id":7}`)
	_, got, err := readRaw(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, got, []byte(`{"jsonrpc":"2.0","result":["last"],"id":7}`)) {
		t.Errorf("after notifications got %s, want only the reply to id 7", got)
	}
}

// sameReply compares two replies; the elements of a batch reply may come in
// any order, as the specification allows.
func sameReply(t testing.TB, got, want []byte) bool {
	t.Helper()
	if jsonEqual(t, got, want) {
		return true
	}
	var g, w []any
	if unmarshal(got, &g) != nil || unmarshal(want, &w) != nil || len(g) != len(w) {
		return false
	}
	used := make([]bool, len(g))
	for _, we := range w {
		found := false
		for i, ge := range g {
			if !used[i] && jsonEqual(t, marshal(ge), marshal(we)) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// TestBinaryMessage: a binary frame closes the connection with status 1008,
// and the server's Peer ends with a cause wrapping ErrBinaryMessage.
func TestBinaryMessage(t *testing.T) {
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}}, nil)
	c := ts.rawDial(t, nil)
	server := ts.nextPeer(t)

	ctx := testCtx(t, wait)
	if err := c.Write(ctx, websocket.MessageBinary, []byte(`{"jsonrpc":"2.0","method":"echo","id":1}`)); err != nil {
		t.Fatal(err)
	}
	_, msg, err := readRaw(t, c)
	if got := websocket.CloseStatus(err); got != websocket.StatusPolicyViolation {
		t.Errorf("raw read after a binary frame: %q, %v (status %v), want close status 1008", msg, err, got)
	}
	if err := waitErr(t, "server Wait", server); !errors.Is(err, ws.ErrBinaryMessage) {
		t.Errorf("server Wait = %v, want it to wrap ws.ErrBinaryMessage", err)
	}
}
