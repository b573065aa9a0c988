package httprpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// FuzzPost posts arbitrary bodies to a Server on loopback. Whatever the
// body, the answer comes within a bound and is either 202 with no body,
// 413 (over MaxBodySize), or 200 with JSON-RPC: one response object or a
// non-empty array of them, each with "jsonrpc":"2.0", an id, and exactly
// one of result and error; a body that is not JSON gets -32700 with id
// null. A handler that panics is answered too.
func FuzzPost(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`,
		`[{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]},{"jsonrpc":"2.0","method":"note","params":{}}]`,
		`[]`, `[1,2,3]`, `{`, ``, `null`, `"x"`, `{"jsonrpc":"2.0","id":null,"method":"echo","params":{"a":[1]}}`,
		`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"fail"}`,
		`{"jsonrpc":"2.0","id":1,"method":"panic"}`,
		`{"jsonrpc":"2.0","id":1,"result":1}`,
		`[{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"2.0","method":"note"}]`,
	} {
		f.Add([]byte(s))
	}
	m := testMux()
	m.HandleFunc("panic", func(context.Context, *jsonrpc.Request) (any, error) { panic("boom") })
	hs := startServer(f, &httprpc.Server{Peer: jsonrpc.Options{Handler: m}, MaxBodySize: 64 << 10})
	tr := &http.Transport{}
	f.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: wait}
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := hc.Post(hs.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		reply, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("reading the response: %v", err)
		}
		switch resp.StatusCode {
		case http.StatusAccepted:
			if len(reply) != 0 {
				t.Fatalf("202 with a body: %q", reply)
			}
			if !json.Valid(body) {
				t.Fatalf("invalid JSON %q answered 202", body)
			}
			return
		case http.StatusRequestEntityTooLarge:
			if len(body) <= 64<<10 {
				t.Fatalf("413 for %d bytes", len(body))
			}
			return
		case http.StatusOK:
		default:
			t.Fatalf("status %d for %q", resp.StatusCode, body)
		}
		checkReply(t, body, reply)
	})
}

// checkReply holds a 200's body to the shape of JSON-RPC replies.
func checkReply(t *testing.T, body, reply []byte) {
	var objs []map[string]json.RawMessage
	var one map[string]json.RawMessage
	switch {
	case json.Unmarshal(reply, &one) == nil && one != nil:
		objs = append(objs, one)
	case json.Unmarshal(reply, &objs) == nil && len(objs) > 0:
	default:
		t.Fatalf("reply %q to %q is no response nor array of them", reply, body)
	}
	for _, o := range objs {
		_, hasID := o["id"]
		_, hasRes := o["result"]
		_, hasErr := o["error"]
		if string(o["jsonrpc"]) != `"2.0"` || !hasID || hasRes == hasErr {
			t.Fatalf("malformed response %q to %q", reply, body)
		}
	}
	if !json.Valid(body) {
		var e struct{ Code int }
		if len(objs) != 1 || string(objs[0]["id"]) != "null" || json.Unmarshal(objs[0]["error"], &e) != nil || e.Code != -32700 {
			t.Fatalf("invalid JSON %q answered %q, want -32700 id null", body, reply)
		}
	}
}
