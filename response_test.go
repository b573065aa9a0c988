package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// TestMalformedReplyFailsCall pins issue 9's finding 3: a reply whose id
// names a pending call but whose envelope is malformed used to be dropped,
// leaving the call to wait for its ctx (forever with Background). Now the
// call fails at once with an *InvalidResponseError that carries what was
// received.
func TestMalformedReplyFailsCall(t *testing.T) {
	for _, tc := range []struct{ name, reply string }{
		{"no jsonrpc member", `{"id":%s,"result":3}`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":%s,"result":3}`},
		{"result and error", `{"jsonrpc":"2.0","id":%s,"result":1,"error":{"code":1,"message":"both"}}`},
		{"neither result nor error", `{"jsonrpc":"2.0","id":%s,"data":1,"error":null}`},
		{"code is a string", `{"jsonrpc":"2.0","id":%s,"error":{"code":"-32000","message":"m"}}`},
		{"code is not an integer", `{"jsonrpc":"2.0","id":%s,"error":{"code":1.5,"message":"m"}}`},
		{"error is not an object", `{"jsonrpc":"2.0","id":%s,"error":"not an object"}`},
		{"message is not a string", `{"jsonrpc":"2.0","id":%s,"error":{"code":1,"message":7}}`},
		{"in a batch", `[{"id":%s,"result":3}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, r := newRaw(t, nil, nil)
			res := callAsync(p, testCtx(t, wait), "m", nil)
			req := parseWire(t, r.recv())
			sent := fmt.Sprintf(tc.reply, req.ID)
			r.send(sent)
			got := within(t, res, "the call")
			var ire *InvalidResponseError
			if !errors.Is(got.err, ErrInvalidResponse) || !errors.As(got.err, &ire) {
				t.Fatalf("Call = %q, %v; want an InvalidResponseError", got.s, got.err)
			}
			if !bytes.Contains([]byte(sent), ire.Received) || len(ire.Received) < 10 || ire.Reason == "" {
				t.Errorf("error carries %q (%s), want the reply %s", ire.Received, ire.Reason, sent)
			}
			if n := pendingLen(p); n != 0 {
				t.Errorf("%d calls left pending", n)
			}
		})
	}
}

// TestLenientReplies: what peers in the wild send whose meaning is plain is
// accepted: "error": null next to a result, "result": null next to an
// error, and an error object without a message (jrpc2 omits an empty one).
func TestLenientReplies(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		result      string
		code        int64
	}{
		{"error null beside result", `{"jsonrpc":"2.0","id":%s,"result":"ok","error":null}`, "ok", 0},
		{"result null beside error", `{"jsonrpc":"2.0","id":%s,"result":null,"error":{"code":-32001,"message":"m"}}`, "", -32001},
		{"no message", `{"jsonrpc":"2.0","id":%s,"error":{"code":-32002}}`, "", -32002},
		{"null message", `{"jsonrpc":"2.0","id":%s,"error":{"code":-32003,"message":null}}`, "", -32003},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, r := newRaw(t, nil, nil)
			res := callAsync(p, testCtx(t, wait), "m", nil)
			req := parseWire(t, r.recv())
			r.send(fmt.Sprintf(tc.reply, req.ID))
			got := within(t, res, "the call")
			if tc.code == 0 {
				if got.err != nil || got.s != tc.result {
					t.Fatalf("Call = %q, %v; want %q", got.s, got.err, tc.result)
				}
				return
			}
			var e *Error
			if !errors.As(got.err, &e) || e.Code != tc.code || e.Message != "" && e.Message != "m" {
				t.Fatalf("Call = %q, %v; want an *Error with code %d", got.s, got.err, tc.code)
			}
		})
	}
}
