package main

import (
	"slices"
	"testing"
)

// specExamples are the examples of section 7 of the JSON-RPC 2.0
// specification, each on one line so that line framing can carry the
// invalid ones too. An empty want means no reply at all; a batch want is
// matched by element, in any order.
var specExamples = []struct {
	name  string
	send  string
	want  string
	batch bool
}{
	{name: "positional 1",
		send: `{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}`,
		want: `{"jsonrpc": "2.0", "result": 19, "id": 1}`},
	{name: "positional 2",
		send: `{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}`,
		want: `{"jsonrpc": "2.0", "result": -19, "id": 2}`},
	{name: "named 1",
		send: `{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}`,
		want: `{"jsonrpc": "2.0", "result": 19, "id": 3}`},
	{name: "named 2",
		send: `{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}`,
		want: `{"jsonrpc": "2.0", "result": 19, "id": 4}`},
	{name: "notification update",
		send: `{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}`},
	{name: "notification foobar",
		send: `{"jsonrpc": "2.0", "method": "foobar"}`},
	{name: "method not found",
		send: `{"jsonrpc": "2.0", "method": "foobar", "id": "1"}`,
		want: `{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "1"}`},
	{name: "invalid JSON",
		send: `{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]`,
		want: `{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}`},
	{name: "invalid request",
		send: `{"jsonrpc": "2.0", "method": 1, "params": "bar"}`,
		want: `{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}`},
	{name: "batch invalid JSON",
		send: `[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},{"jsonrpc": "2.0", "method"]`,
		want: `{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}`},
	{name: "empty array",
		send: `[]`,
		want: `{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}`},
	{name: "batch of one invalid",
		send: `[1]`, batch: true,
		want: `[{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}]`},
	{name: "batch of three invalid",
		send: `[1,2,3]`, batch: true,
		want: `[
			{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
			{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
			{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}]`},
	{name: "mixed batch",
		send: `[{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},` +
			`{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},` +
			`{"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},` +
			`{"foo": "boo"},` +
			`{"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},` +
			`{"jsonrpc": "2.0", "method": "get_data", "id": "9"}]`,
		batch: true,
		want: `[
			{"jsonrpc": "2.0", "result": 7, "id": "1"},
			{"jsonrpc": "2.0", "result": 19, "id": "2"},
			{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
			{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "5"},
			{"jsonrpc": "2.0", "result": ["hello", 5], "id": "9"}]`},
	{name: "all-notification batch",
		send: `[{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},` +
			`{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]`},
}

func TestSpecExamples(t *testing.T) {
	eachFraming(t, func(t *testing.T, c *child) {
		for _, ex := range specExamples {
			c.run(t, ex.name, func(t *testing.T) {
				c.send(ex.send)
				switch {
				case ex.want == "":
					c.noReply()
				case ex.batch:
					got := c.recv()
					if g, w := canonBatch(t, got), canonBatch(t, ex.want); !slices.Equal(g, w) {
						t.Errorf("sent %s\ngot  %s\nwant %s", ex.send, got, ex.want)
					}
				default:
					got := c.recv()
					if canon(t, got) != canon(t, ex.want) {
						t.Errorf("sent %s\ngot  %s\nwant %s", ex.send, got, ex.want)
					}
				}
			})
		}
	})
}
