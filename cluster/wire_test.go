package cluster

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestToken: any name is one valid subject token, and distinct names give
// distinct tokens.
func TestToken(t *testing.T) {
	names := []string{"", "%", "%25", "a", "a.b", "a%2Eb", "*", ">", "a b", "\t", "é", "user:42", "room/1", "~x", strings.Repeat("z", 300)}
	seen := make(map[string]string)
	for _, name := range names {
		tok := token(name)
		if tok == "" || strings.ContainsAny(tok, ".*> \t\r\n") {
			t.Errorf("token(%q) = %q: not a subject token", name, tok)
		}
		for _, c := range []byte(tok) {
			if c < '!' || c > '~' {
				t.Errorf("token(%q) = %q holds byte %#x", name, tok, c)
			}
		}
		if other, dup := seen[tok]; dup {
			t.Errorf("token(%q) = token(%q) = %q", name, other, tok)
		}
		seen[tok] = name
	}
	if got := token("user-42_x"); got != "user-42_x" {
		t.Errorf("a plain name changed: %q", got)
	}
}

// TestFrame: method and params go through, whatever the method holds.
func TestFrame(t *testing.T) {
	for _, tc := range []struct {
		method string
		params json.RawMessage
	}{
		{"tick", json.RawMessage(`{"a":1}`)},
		{"", nil},
		{"a\nb\x00c", json.RawMessage(`[1]`)},
		{strings.Repeat("m", 200), nil},
	} {
		m, p, err := unframe(frame(tc.method, tc.params))
		if err != nil || m != tc.method || string(p) != string(tc.params) || (p == nil) != (tc.params == nil) {
			t.Errorf("frame(%q, %s) came back as %q, %s, %v", tc.method, tc.params, m, p, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {5, 'a'}} {
		if _, _, err := unframe(bad); err == nil {
			t.Errorf("unframe(%q) did not fail", bad)
		}
	}
}

// TestMarshalParams: the rules of jsonrpc.Peer's params.
func TestMarshalParams(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
		ok   bool
	}{
		{nil, "", true},
		{map[string]int{"a": 1}, `{"a":1}`, true},
		{[]int{1}, `[1]`, true},
		{[]int(nil), "", true},
		{json.RawMessage(` {"x":2} `), `{"x":2}`, true},
		{42, "", false},
		{"s", "", false},
		{json.RawMessage(`{`), "", false},
	} {
		raw, err := marshalParams(tc.in)
		if (err == nil) != tc.ok || string(raw) != tc.want {
			t.Errorf("marshalParams(%#v) = %s, %v", tc.in, raw, err)
		}
	}
}
