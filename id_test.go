package jsonrpc

import (
	"context"
	"encoding/json"
	"testing"
)

// Ids that a decode through float64 or a re-encode of strings would change.
var fidelityIDs = []string{
	`9007199254740993`,
	`12345678901234567890`,
	`-0`,
	`1.5`,
	`1e3`,
	`-12.5E-3`,
	`"ünïcödé ☃"`,
	`"\u00e9"`,
	`"a\"b"`,
	`"\/<&>"`,
	`""`,
	`null`,
}

// TestIDFidelity checks that every reply carries the request's id byte for
// byte: for a result, for each kind of error, and inside a batch.
func TestIDFidelity(t *testing.T) {
	_, r := newRaw(t, mux(t, map[string]HandlerFunc{"echo": echo}), nil)
	for _, id := range fidelityIDs {
		t.Run(id, func(t *testing.T) {
			for _, tc := range []struct{ name, in string }{
				{"result", `{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":[1]}`},
				{"method not found", `{"jsonrpc":"2.0","id":` + id + `,"method":"nope"}`},
				{"invalid request", `{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":"x"}`},
				{"id first, spaces", `{ "id" : ` + id + ` , "jsonrpc":"2.0","method":"echo"}`},
			} {
				got := rawMember(t, r.call(tc.in), "id")
				if string(got) != id {
					t.Errorf("%s: reply id %s, want %s", tc.name, got, id)
				}
			}
			reply := r.call(`[{"jsonrpc":"2.0","id":` + id + `,"method":"nope"}]`)
			var elems []json.RawMessage
			if err := json.Unmarshal(reply, &elems); err != nil || len(elems) != 1 {
				t.Fatalf("batch reply %s", reply)
			}
			if got := rawMember(t, elems[0], "id"); string(got) != id {
				t.Errorf("batch: reply id %s, want %s", got, id)
			}
		})
	}
}

// TestIDFidelityHandlerSees checks the id a handler gets is the sender's
// text.
func TestIDFidelityHandlerSees(t *testing.T) {
	h := HandlerFunc(func(_ context.Context, req *Request) (any, error) { return req.ID.String(), nil })
	_, r := newRaw(t, h, nil)
	for _, id := range fidelityIDs {
		var got string
		reply := r.call(`{"jsonrpc":"2.0","id":` + id + `,"method":"x"}`)
		if err := json.Unmarshal(rawMember(t, reply, "result"), &got); err != nil || got != id {
			t.Errorf("handler saw id %q, want %q (%v)", got, id, err)
		}
	}
}

func TestIDConstructors(t *testing.T) {
	for _, tc := range []struct {
		id           ID
		text         string
		zero, isNull bool
	}{
		{ID{}, "", true, false},
		{NullID(), "null", false, true},
		{Int64ID(-9007199254740993), "-9007199254740993", false, false},
		{StringID(`a"b é`), `"a\"b é"`, false, false},
	} {
		if tc.id.String() != tc.text || tc.id.IsZero() != tc.zero || tc.id.IsNull() != tc.isNull {
			t.Errorf("%#v: String %q IsZero %v IsNull %v", tc.id, tc.id.String(), tc.id.IsZero(), tc.id.IsNull())
		}
		want := tc.text
		if tc.zero {
			want = "null"
		}
		if b, err := json.Marshal(tc.id); err != nil || string(b) != want {
			t.Errorf("Marshal(%#v) = %s, %v; want %s", tc.id, b, err, want)
		}
	}
}

func TestIDUnmarshal(t *testing.T) {
	for _, in := range fidelityIDs {
		var id ID
		if err := json.Unmarshal([]byte(in), &id); err != nil || id.String() != in {
			t.Errorf("Unmarshal(%s) = %q, %v", in, id.String(), err)
		}
	}
	for _, in := range []string{`true`, `false`, `{}`, `[1]`, `{"a":1}`} {
		var id ID
		if err := json.Unmarshal([]byte(in), &id); err == nil {
			t.Errorf("Unmarshal(%s) = %q, want an error", in, id.String())
		}
	}
	// Ids are comparable: equal text, equal key.
	m := map[ID]int{StringID("x"): 1, Int64ID(1): 2}
	var a, b ID
	json.Unmarshal([]byte(`"x"`), &a)
	json.Unmarshal([]byte(`1`), &b)
	if m[a] != 1 || m[b] != 2 {
		t.Errorf("map lookups by unmarshalled ids: %d %d", m[a], m[b])
	}
}
