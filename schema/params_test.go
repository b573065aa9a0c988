package schema

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/peerwire/jsonrpc"
)

type point struct {
	X     int    `json:"x"`
	Y     int    `json:"y,omitempty"`
	Label string `json:"label"`
}

type pointEmbed struct {
	point
	Z int `json:"z"`
}

// verdict runs jsonrpc.Typed for P on raw params: nil if it takes them.
func verdict[P any](raw string) error {
	h := jsonrpc.Typed(func(context.Context, P) (bool, error) { return true, nil })
	_, err := h.ServeRPC(context.Background(), &jsonrpc.Request{Method: "m", Params: json.RawMessage(raw)})
	var e *jsonrpc.Error
	if errors.As(err, &e) && e.Code == jsonrpc.CodeInvalidParams {
		return err
	}
	return nil
}

type paramsRow struct {
	typ       reflect.Type
	verdict   func(string) error
	structure string
	names     []string
	taken     []string // Typed takes them, and they validate
	refused   []string // Typed refuses them, and they do not validate
}

func pr[P any](structure string, names []string, taken, refused []string) paramsRow {
	return paramsRow{reflect.TypeFor[P](), verdict[P], structure, names, taken, refused}
}

// TestParamsTable holds Params to what jsonrpc.Typed does with params:
// what it takes validates against MethodParams.Schema (by name and, where
// Structure says so, by position: prefixItems), what it refuses does not.
func TestParamsTable(t *testing.T) {
	for _, r := range []paramsRow{
		pr[point]("either", []string{"x", "y", "label"},
			[]string{`{"x":1,"label":"a"}`, `[1,2,"a"]`, `[1]`, `[]`},
			[]string{`[1,2,"a",4]`, `["a"]`, `[1,"x"]`, `{"x":"1"}`, `1`}),
		pr[pointEmbed]("by-name", []string{"x", "y", "label", "z"},
			[]string{`{"x":1,"label":"a","z":2}`},
			[]string{`{"z":"a"}`, `[{"x":1},2,3]`}),
		pr[[2]string]("by-position", []string{"0", "1"},
			[]string{`["a","b"]`, `["a"]`},
			[]string{`["a","b","c"]`, `[1]`}),
		pr[int]("by-position", []string{"0"},
			[]string{`[7]`},
			[]string{`[]`, `[1,2]`, `["x"]`, `{"a":1}`}),
		pr[map[string]int]("", nil,
			[]string{`{"a":1}`, `[{"a":1}]`},
			[]string{`[{"a":1},{}]`, `{"a":"x"}`}),
		pr[[]string]("", nil,
			[]string{`["a","b","c"]`},
			[]string{`[1]`, `{"a":"b"}`}),
	} {
		t.Run(r.typ.String(), func(t *testing.T) {
			var g Generator
			mp, err := g.Params(r.typ)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range mp.List {
				names = append(names, p.Name)
			}
			if mp.Structure != r.structure || !reflect.DeepEqual(names, r.names) {
				t.Errorf("structure %q, names %q; want %q, %q", mp.Structure, names, r.structure, r.names)
			}
			whole := Schema{}
			if defs := g.Defs(); defs != nil {
				whole["$defs"] = defs
			}
			for k, v := range mp.Schema {
				whole[k] = v
			}
			sch := compile(t, whole)
			for _, in := range r.taken {
				if err := r.verdict(in); err != nil {
					t.Fatalf("the table is wrong: Typed refuses %s: %v", in, err)
				}
				if err := sch.Validate(decode(t, []byte(in))); err != nil {
					t.Errorf("%s, which Typed takes, does not validate: %v", in, err)
				}
			}
			for _, in := range r.refused {
				if r.verdict(in) == nil {
					t.Fatalf("the table is wrong: Typed takes %s", in)
				}
				if err := sch.Validate(decode(t, []byte(in))); err == nil {
					t.Errorf("%s, which Typed refuses, validates", in)
				}
			}
		})
	}
}
