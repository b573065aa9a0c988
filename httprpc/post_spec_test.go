package httprpc_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestPostSpec posts raw bodies to a Server on loopback and holds each
// response to the status, the headers and the body (as JSON, or byte for
// byte where ids are at stake) that the specification and the Server's doc
// ask for: every trap of the spec is answered as the Peer answers it.
func TestPostSpec(t *testing.T) {
	hs := startServer(t, newServer())
	const ct = "application/json"
	cases := []struct {
		name   string
		method string // default POST
		ctype  string // default application/json
		body   string
		status int
		want   string // the reply as JSON; "" for no body
		exact  bool   // the reply byte for byte
		header map[string]string
	}{
		{name: "call", body: `{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`,
			status: 200, want: `{"jsonrpc":"2.0","id":1,"result":3}`, exact: true,
			header: map[string]string{"Content-Type": ct}},
		{name: "string id", body: `{"jsonrpc":"2.0","id":"abc","method":"add","params":[1,2]}`,
			status: 200, want: `{"jsonrpc":"2.0","id":"abc","result":3}`, exact: true},
		{name: "large integer id byte for byte", body: `{"jsonrpc":"2.0","id":12345678901234567890123,"method":"add","params":[1,2]}`,
			status: 200, want: `{"jsonrpc":"2.0","id":12345678901234567890123,"result":3}`, exact: true},
		{name: "id 2^53+1 byte for byte", body: `{"jsonrpc":"2.0","id":9007199254740993,"method":"echo","params":[]}`,
			status: 200, want: `{"jsonrpc":"2.0","id":9007199254740993,"result":[]}`, exact: true},
		{name: "id null is a call", body: `{"jsonrpc":"2.0","id":null,"method":"add","params":[2,2]}`,
			status: 200, want: `{"jsonrpc":"2.0","id":null,"result":4}`},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"add","params":[1,2]}`, status: 202},
		{name: "failing notification gets no reply", body: `{"jsonrpc":"2.0","method":"note","params":{}}`, status: 202},
		{name: "unknown notification gets no reply", body: `{"jsonrpc":"2.0","method":"nope"}`, status: 202},
		{name: "all-notification batch", body: `[{"jsonrpc":"2.0","method":"note","params":{}},{"jsonrpc":"2.0","method":"add","params":[1,2]}]`, status: 202},
		{name: "empty batch", body: `[]`, status: 200,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{name: "batch of non-objects", body: `[1,2,3]`, status: 200,
			want: `[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]`},
		{name: "invalid JSON", body: `{"jsonrpc":"2.0","method":"add","params":[1,2]`, status: 200,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{name: "invalid JSON batch", body: `[{"jsonrpc":"2.0","method":"add","params":[1,2]},{"jsonrpc":"2.0","method"]`, status: 200,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{name: "empty body", body: ``, status: 200,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{name: "invalid object without id is not a notification", body: `{"jsonrpc":"2.0","method":1}`, status: 200,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{name: "wrong version", body: `{"jsonrpc":"1.0","id":1,"method":"add","params":[1,2]}`, status: 200,
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{name: "params a number", body: `{"jsonrpc":"2.0","id":1,"method":"add","params":3}`, status: 200,
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{name: "params a string", body: `{"jsonrpc":"2.0","id":1,"method":"echo","params":"x"}`, status: 200,
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request"}}`},
		{name: "method not found", body: `{"jsonrpc":"2.0","id":1,"method":"nope"}`, status: 200,
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`},
		{name: "invalid params", body: `{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1}}`, status: 200,
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params"}}`},
		{name: "application error keeps code message data", body: `{"jsonrpc":"2.0","id":7,"method":"fail"}`, status: 200,
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":42,"message":"boom","data":{"n":7}}}`},
		{name: "mixed batch: notifications get no element", body: `[{"jsonrpc":"2.0","id":"a","method":"add","params":[1,1]},{"jsonrpc":"2.0","method":"note","params":{}},{"jsonrpc":"2.0","id":"b","method":"fail"},{"foo":1}]`,
			status: 200, want: `[{"jsonrpc":"2.0","id":"a","result":2},{"jsonrpc":"2.0","id":"b","error":{"code":42,"message":"boom","data":{"n":7}}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]`},
		{name: "nesting 100,000 deep", body: strings.Repeat("[", 100000) + strings.Repeat("]", 100000), status: 200,
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{name: "a response is no request", body: `{"jsonrpc":"2.0","id":1,"result":3}`, status: 202},
		{name: "charset parameter allowed", ctype: "application/json; charset=utf-8", body: `{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`,
			status: 200, want: `{"jsonrpc":"2.0","id":1,"result":3}`},
		{name: "GET is 405 with Allow", method: http.MethodGet, status: 405, header: map[string]string{"Allow": "POST"}},
		{name: "PUT is 405 with Allow", method: http.MethodPut, body: `{}`, status: 405, header: map[string]string{"Allow": "POST"}},
		{name: "form content type is 415", ctype: "application/x-www-form-urlencoded", body: `{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`, status: 415},
		{name: "no content type is 415", ctype: "-", body: `{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}`, status: 415},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method, ctype := tc.method, tc.ctype
			if method == "" {
				method = http.MethodPost
			}
			switch ctype {
			case "":
				ctype = ct
			case "-":
				ctype = ""
			}
			req, err := http.NewRequestWithContext(testCtx(t, wait), method, hs.URL, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if ctype != "" {
				req.Header.Set("Content-Type", ctype)
			}
			resp, body := do(t, req)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, tc.status, body)
			}
			for k, v := range tc.header {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if tc.status != 200 {
				if tc.status == 202 && body != "" {
					t.Errorf("202 with a body: %q", body)
				}
				return
			}
			if got := resp.Header.Get("Content-Type"); got != ct {
				t.Errorf("Content-Type %q, want %q", got, ct)
			}
			if tc.exact {
				if body != tc.want {
					t.Errorf("body\n %s\nwant\n %s", body, tc.want)
				}
				return
			}
			if !sameJSON(t, body, tc.want) {
				t.Errorf("body\n %s\nwant (as JSON)\n %s", body, tc.want)
			}
		})
	}
}

// sameJSON reports whether a and b are the same JSON value; error objects
// are compared without their data unless want has one, since the Peer
// says why in data.
func sameJSON(t testing.TB, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("reply is not JSON: %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	stripData(g, w)
	return reflect.DeepEqual(g, w)
}

// stripData removes from got's error objects the data that want's lack.
func stripData(got, want any) {
	switch g := got.(type) {
	case []any:
		w, _ := want.([]any)
		for i := range g {
			var wi any
			if i < len(w) {
				wi = w[i]
			}
			stripData(g[i], wi)
		}
	case map[string]any:
		w, _ := want.(map[string]any)
		ge, _ := g["error"].(map[string]any)
		we, _ := w["error"].(map[string]any)
		if ge != nil {
			if _, ok := we["data"]; !ok {
				delete(ge, "data")
			}
		}
	}
}
