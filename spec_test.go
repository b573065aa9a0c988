package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// specMux serves the methods of the examples in section 7 of the JSON-RPC
// 2.0 specification, plus a failing and a panicking method.
func specMux(t testing.TB) *Mux {
	t.Helper()
	m := mux(t, map[string]HandlerFunc{
		"get_data":     func(context.Context, *Request) (any, error) { return []any{"hello", 5}, nil },
		"update":       func(context.Context, *Request) (any, error) { return nil, nil },
		"notify_hello": func(context.Context, *Request) (any, error) { return nil, nil },
		"notify_sum":   func(context.Context, *Request) (any, error) { return nil, nil },
		"fail":         func(context.Context, *Request) (any, error) { return nil, errors.New("failed") },
		"panic":        func(context.Context, *Request) (any, error) { panic("boom") },
	})
	type subtract struct {
		Minuend    float64 `json:"minuend"`
		Subtrahend float64 `json:"subtrahend"`
	}
	Register(m, "subtract", func(_ context.Context, p subtract) (float64, error) {
		return p.Minuend - p.Subtrahend, nil
	})
	Register(m, "sum", func(_ context.Context, p []float64) (float64, error) {
		s := 0.0
		for _, x := range p {
			s += x
		}
		return s, nil
	})
	return m
}

// specCase is one message in and the reply expected: "" means no reply at
// all; a JSON array is compared as a multiset.
type specCase struct {
	name, in, want string
}

// The examples of section 7 of the specification, verbatim.
var specExamples = []specCase{
	{"positional 1", `{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}`,
		`{"jsonrpc": "2.0", "result": 19, "id": 1}`},
	{"positional 2", `{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}`,
		`{"jsonrpc": "2.0", "result": -19, "id": 2}`},
	{"named 1", `{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}`,
		`{"jsonrpc": "2.0", "result": 19, "id": 3}`},
	{"named 2", `{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}`,
		`{"jsonrpc": "2.0", "result": 19, "id": 4}`},
	{"notification update", `{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}`, ``},
	{"notification foobar", `{"jsonrpc": "2.0", "method": "foobar"}`, ``},
	{"non-existent method", `{"jsonrpc": "2.0", "method": "foobar", "id": "1"}`,
		`{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "1"}`},
	{"invalid JSON", `{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]`,
		`{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}`},
	{"invalid Request object", `{"jsonrpc": "2.0", "method": 1, "params": "bar"}`,
		`{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}`},
	{"batch, invalid JSON", `[
  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
  {"jsonrpc": "2.0", "method"
]`, `{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}`},
	{"empty array", `[]`,
		`{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}`},
	{"invalid batch of one", `[1]`,
		`[{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}]`},
	{"invalid batch", `[1,2,3]`, `[
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}
]`},
	{"mixed batch", `[
  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
  {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
  {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
  {"foo": "boo"},
  {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
  {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
]`, `[
  {"jsonrpc": "2.0", "result": 7, "id": "1"},
  {"jsonrpc": "2.0", "result": 19, "id": "2"},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "5"},
  {"jsonrpc": "2.0", "result": ["hello", 5], "id": "9"}
]`},
	{"all-notification batch", `[
  {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
  {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}
]`, ``},
}

const (
	invalidNull = `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`
	invalidID1  = `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":1}`
)

// Edge cases the specification implies.
var specEdgeCases = []specCase{
	{"null id is a call", `{"jsonrpc":"2.0","method":"get_data","id":null}`,
		`{"jsonrpc":"2.0","result":["hello",5],"id":null}`},
	{"invalid without id", `{"jsonrpc":"2.0","method":"subtract","params":"bar"}`, invalidNull},
	{"invalid with id keeps it", `{"jsonrpc":"2.0","method":1,"id":1}`, invalidID1},
	{"no method", `{"jsonrpc":"2.0","id":1}`, invalidID1},
	{"jsonrpc 1.0", `{"jsonrpc":"1.0","method":"get_data","id":1}`, invalidID1},
	{"jsonrpc missing", `{"method":"get_data","id":1}`, invalidID1},
	{"jsonrpc a number", `{"jsonrpc":2.0,"method":"get_data","id":1}`, invalidID1},
	{"method null", `{"jsonrpc":"2.0","method":null,"id":1}`, invalidID1},
	{"method an object", `{"jsonrpc":"2.0","method":{},"id":1}`, invalidID1},
	{"params a string", `{"jsonrpc":"2.0","method":"update","params":"x","id":1}`, invalidID1},
	{"params a number", `{"jsonrpc":"2.0","method":"update","params":3,"id":1}`, invalidID1},
	{"params null", `{"jsonrpc":"2.0","method":"update","params":null,"id":1}`, invalidID1},
	{"params true", `{"jsonrpc":"2.0","method":"update","params":true,"id":1}`, invalidID1},
	{"id an object", `{"jsonrpc":"2.0","method":"get_data","id":{}}`, invalidNull},
	{"id an array", `{"jsonrpc":"2.0","method":"get_data","id":[1]}`, invalidNull},
	{"id a bool", `{"jsonrpc":"2.0","method":"get_data","id":true}`, invalidNull},
	{"unknown method notification", `{"jsonrpc":"2.0","method":"nope","params":[1]}`, ``},
	{"failing notification", `{"jsonrpc":"2.0","method":"fail"}`, ``},
	{"panicking notification", `{"jsonrpc":"2.0","method":"panic"}`, ``},
	{"top-level number", `1`, invalidNull},
	{"top-level string", `"x"`, invalidNull},
	{"top-level null", `null`, invalidNull},
	{"escaped keys", `{"\u006asonrpc":"\u0032.0","\u006dethod":"sub\u0074ract","params":[42,23],"\u0069d":1}`,
		`{"jsonrpc":"2.0","result":19,"id":1}`},
	{"whitespace around", " \r\n\t{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":1}\n\t ",
		`{"jsonrpc":"2.0","result":["hello",5],"id":1}`},
	{"whitespace around a batch", "\n [ {\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":1} ]\n",
		`[{"jsonrpc":"2.0","result":["hello",5],"id":1}]`},
	{"failing call hides its error", `{"jsonrpc":"2.0","method":"fail","id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":1}`},
	{"panicking call", `{"jsonrpc":"2.0","method":"panic","id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":1}`},
	{"batch of a response only", `[{"jsonrpc":"2.0","result":1,"id":99}]`, ``},
}

func TestSpecExamples(t *testing.T) { runSpecCases(t, specExamples) }

func TestSpecEdgeCases(t *testing.T) { runSpecCases(t, specEdgeCases) }

func runSpecCases(t *testing.T, cases []specCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, r := newRaw(t, specMux(t), nil)
			if tc.want == "" {
				r.expectNoReply(tc.in)
				return
			}
			assertJSON(t, r.call(tc.in), tc.want)
			r.quiet(10 * time.Millisecond) // exactly one reply
		})
	}
}

// The examples one after another on one connection: a Peer keeps serving
// after any of them.
func TestSpecExamplesOneConnection(t *testing.T) {
	_, r := newRaw(t, specMux(t), nil)
	for _, tc := range append(specExamples, specEdgeCases...) {
		if tc.want == "" {
			r.expectNoReply(tc.in)
		} else {
			assertJSON(t, r.call(tc.in), tc.want)
		}
	}
}

// TestReservedMethodNames: Handle panics, as http.ServeMux does, on a
// programmer's mistake: a reserved "rpc." name (the panic value wraps
// ErrReservedMethod), a name registered twice, an empty name, a nil handler.
func TestReservedMethodNames(t *testing.T) {
	m := NewMux()
	for _, name := range []string{"rpc.foo", "rpc.", "rpc.discover"} {
		if p := panicOf(func() { m.HandleFunc(name, echo) }); !isErr(p, ErrReservedMethod) {
			t.Errorf("Handle(%q) panicked with %v, want ErrReservedMethod", name, p)
		}
	}
	for _, name := range []string{"rpcfoo", "x.rpc.foo", "RPC.foo"} {
		if p := panicOf(func() { m.HandleFunc(name, echo) }); p != nil {
			t.Errorf("Handle(%q) panicked with %v", name, p)
		}
	}
	if p := panicOf(func() { m.HandleFunc("rpcfoo", echo) }); p == nil || isErr(p, ErrReservedMethod) {
		t.Errorf("registering twice: %v, want a non-reserved panic", p)
	}
	if p := panicOf(func() { m.HandleFunc("", echo) }); p == nil || !strings.Contains(fmt.Sprint(p), "empty") {
		t.Errorf("empty name: %v", p)
	}
	if p := panicOf(func() { m.Handle("nil", nil) }); p == nil {
		t.Error("a nil handler did not panic")
	}
}

// panicOf returns what f panicked with, or nil.
func panicOf(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// isErr reports whether a panic value is an error wrapping target.
func isErr(p any, target error) bool {
	err, ok := p.(error)
	return ok && errors.Is(err, target)
}
