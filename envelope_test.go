package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReadObject pins the envelope reader: it finds the members JSON-RPC
// defines (escaped names decoded, the last of a repeated name kept) and
// rejects what encoding/json's Valid rejects, including nesting deeper
// than encoding/json allows.
func TestReadObject(t *testing.T) {
	for _, tc := range []struct {
		in                   string
		method, params, id   string
		result, err, version string
	}{
		{in: `{}`},
		{in: `{"jsonrpc":"2.0","method":"m","params":[1,{"a":"}"}],"id":7}`, version: `"2.0"`, method: `"m"`, params: `[1,{"a":"}"}]`, id: `7`},
		{in: `{ "\u0069d" : "x" , "result" : null , "other":{"id":2} }`, id: `"x"`, result: `null`},
		{in: `{"id":1,"id":2,"error":{"code":1}}`, id: `2`, err: `{"code":1}`},
	} {
		m, end, ok := readObject([]byte(tc.in), 0, 0)
		if !ok || end != len(tc.in) {
			t.Errorf("readObject(%s): ok %v, end %d of %d", tc.in, ok, end, len(tc.in))
			continue
		}
		for _, f := range []struct{ name, got, want string }{
			{"jsonrpc", string(m.jsonrpc), tc.version}, {"method", string(m.method), tc.method},
			{"params", string(m.params), tc.params}, {"id", string(m.id), tc.id},
			{"result", string(m.result), tc.result}, {"error", string(m.err), tc.err},
		} {
			if f.got != f.want {
				t.Errorf("readObject(%s).%s = %q, want %q", tc.in, f.name, f.got, f.want)
			}
		}
	}
	deep := `{"params":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`
	tooDeep := `{"params":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`
	for _, in := range []string{
		`{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a":[1,]}`, `{"a":"\x"}`, `{1:2}`,
		`{"a":1}x`, `{"a":tru}`, `{"a":01}`, deep, tooDeep,
	} {
		_, end, ok := readObject([]byte(in), 0, 0)
		if got, want := ok && end == len(in), json.Valid([]byte(in)); got != want {
			t.Errorf("readObject(%.40s…) accepts: %v, encoding/json's Valid: %v", in, got, want)
		}
	}
}

// TestReadBatch: a batch is accepted exactly when encoding/json's Valid
// accepts it, elements of every kind included.
func TestReadBatch(t *testing.T) {
	for _, in := range []string{
		`[]`, `[ ]`, `[1,"a",{"id":1},[2],null]`, `[{"id":1},]`, `[,]`, `[1 2]`, `[{"id":}]`,
		`[1]]`, `[`, `[{"a":"` + "\x01" + `"}]`,
	} {
		_, ok := readBatch([]byte(in), nil)
		if want := json.Valid([]byte(in)); ok != want {
			t.Errorf("readBatch(%s) = %v, encoding/json's Valid: %v", in, ok, want)
		}
	}
}
