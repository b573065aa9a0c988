package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

//lint:file-ignore SA5008 the tag "-," names a member "-", one of the rules pinned

type tagged struct {
	Name     string  `json:"name"`
	Renamed  int     `json:"n,omitempty"`
	Zero     float64 `json:"z,omitzero"`
	Skipped  int     `json:"-"`
	Dash     int     `json:"-,"`
	Quoted   int64   `json:"q,string"`
	QuotedP  *bool   `json:"qp,string,omitempty"`
	Untagged bool
	hidden   int //lint:ignore U1000 an unexported field, which JSON leaves out
}

type inner struct {
	A    int    `json:"a"`
	B    string `json:"b"`
	Deep int    `json:"deep"`
}

type Other struct {
	B string `json:"b"` // ties with inner.B at depth 1: both hidden
	C int    `json:"c,omitempty"`
}

type embedded struct {
	inner
	*Other
	A     string `json:"a"` // shallower: hides inner.A
	Named inner  `json:"named"`
}

type colour int

// MarshalJSON writes a colour as its name.
func (c colour) MarshalJSON() ([]byte, error) {
	return json.Marshal([]string{"red", "green"}[c])
}

// UnmarshalJSON reads a colour's name.
func (c *colour) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"red"`:
		*c = 0
	case `"green"`:
		*c = 1
	default:
		return errors.New("not a colour")
	}
	return nil
}

// JSONSchema says a colour's form.
func (colour) JSONSchema() Schema { return Schema{"enum": []any{"red", "green"}} }

type opaque struct{ v int }

// MarshalJSON writes whatever it likes.
func (o opaque) MarshalJSON() ([]byte, error) { return json.Marshal(o.v) }

// UnmarshalJSON reads a number.
func (o *opaque) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &o.v) }

type textKey struct{ a, b string }

// MarshalText writes a:b.
func (k textKey) MarshalText() ([]byte, error) { return []byte(k.a + ":" + k.b), nil }

// UnmarshalText reads a:b.
func (k *textKey) UnmarshalText(b []byte) error {
	a, bb, ok := strings.Cut(string(b), ":")
	if !ok {
		return errors.New("no colon")
	}
	k.a, k.b = a, bb
	return nil
}

type tree struct {
	Name string  `json:"name"`
	Kids []tree  `json:"kids,omitempty"`
	Up   *tree   `json:"up,omitempty"`
	Tags nesting `json:"tags,omitempty"`
}

type nesting map[string]nesting

type holder struct {
	Raw  json.RawMessage `json:"raw"`
	Any  any             `json:"any"`
	When time.Time       `json:"when"`
	Ptr  *time.Time      `json:"ptr"`
	Num  jsonv1.Number   `json:"num"`
	Std  json.Number     `json:"std"` // a string to this engine: its Number is jsonv1.Number
}

// row is one type of the table: values that marshal to JSON that must
// validate, and JSON texts that the engine refuses to unmarshal into the
// type, which must not.
type row struct {
	name    string
	typ     reflect.Type
	values  []any
	refused []string
}

func typ[T any]() reflect.Type { return reflect.TypeFor[T]() }

var table = []row{
	{"tags", typ[tagged](), []any{tagged{}, tagged{Name: "x", Renamed: 1, Zero: 2, Dash: 3, Quoted: -7, QuotedP: new(bool), Untagged: true}},
		[]string{`{"name":1}`, `{"n":"1"}`, `{"q":7}`, `{"qp":true}`, `{"-":"x"}`, `{"Untagged":0}`, `[]`, `"x"`}},
	{"embedded", typ[embedded](), []any{embedded{}, embedded{inner: inner{A: 1, Deep: 2}, Other: &Other{C: 3}, A: "a"}},
		[]string{`{"a":1}`, `{"deep":"x"}`, `{"c":"x"}`, `{"named":{"a":"x"}}`}},
	{"map string", typ[map[string]int](), []any{map[string]int(nil), map[string]int{"a": 1}}, []string{`{"a":"x"}`, `[1]`, `{"a":1.5}`}},
	{"map int", typ[map[int8]string](), []any{map[int8]string{-3: "x", 0: "y"}}, []string{`{"x":"a"}`, `{"1":2}`, `{"1.5":"a"}`}},
	{"map uint", typ[map[uint]bool](), []any{map[uint]bool{7: true}}, []string{`{"-1":true}`}},
	{"map text key", typ[map[textKey]int](), []any{map[textKey]int{{"a", "b"}: 1}}, []string{`{"a:b":"x"}`}},
	{"slice", typ[[]int](), []any{[]int(nil), []int{}, []int{1, 2}}, []string{`["x"]`, `{}`, `1`}},
	{"bytes", typ[[]byte](), []any{[]byte(nil), []byte("hi\x00")}, []string{`"***"`, `[256]`, `1`}},
	{"array", typ[[3]int16](), []any{[3]int16{1, -2, 3}}, []string{`[1,"x"]`, `[70000]`, `{}`}},
	{"pointers", typ[**string](), []any{(**string)(nil), new(*string), ptr(ptr("x"))}, []string{`1`, `[]`}},
	{"ints", typ[struct {
		I8  int8   `json:"i8"`
		U16 uint16 `json:"u16"`
		U64 uint64 `json:"u64"`
		F32 float32
	}](), []any{struct {
		I8  int8   `json:"i8"`
		U16 uint16 `json:"u16"`
		U64 uint64 `json:"u64"`
		F32 float32
	}{-128, 65535, 1<<64 - 1, 3.5}}, []string{`{"i8":128}`, `{"i8":-129}`, `{"u16":-1}`, `{"u16":65536}`, `{"u64":18446744073709551616}`, `{"i8":1.5}`, `{"F32":1e39}`}},
	{"raw, any, time, number", typ[holder](), []any{holder{Raw: json.RawMessage(`{"x":[1]}`), Any: []any{1, "x"}, When: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), Ptr: ptr(time.Unix(0, 0)), Num: "12.5", Std: "x"}},
		[]string{`{"std":1}`, `{"when":"yesterday"}`, `{"when":1}`, `{"ptr":"2025-13-01T00:00:00Z"}`, `{"num":"x"}`, `{"num":true}`}},
	{"own schema", typ[[]colour](), []any{[]colour{0, 1}}, []string{`["blue"]`, `[0]`}},
	{"marshaler", typ[opaque](), []any{opaque{3}}, nil},
	{"text marshaler", typ[textKey](), []any{textKey{"a", "b"}}, []string{`1`, `"nocolon"x`}},
	{"recursive", typ[tree](), []any{tree{Name: "a", Kids: []tree{{Name: "b", Tags: nesting{"x": {"y": nil}}}}, Up: &tree{Name: "r"}}},
		[]string{`{"kids":[{"name":1}]}`, `{"up":{"up":{"kids":1}}}`, `{"tags":{"x":{"y":1}}}`}},
	{"any", typ[any](), []any{nil, 1, "x", []any{map[string]any{}}}, nil},
}

func ptr[T any](v T) *T { return &v }

// TestSchemaTable holds the package's rules on the table of tricky types:
// every schema is valid against the 2020-12 meta-schema, values marshalled
// from Go validate, and values the engine refuses to unmarshal do not.
func TestSchemaTable(t *testing.T) {
	for _, r := range table {
		t.Run(r.name, func(t *testing.T) {
			s, err := For(r.typ)
			if err != nil {
				t.Fatal(err)
			}
			sch := compile(t, s)
			text, _ := json.Marshal(s)
			for _, v := range r.values {
				b, err := jsonv1.Marshal(v)
				if err != nil {
					t.Fatalf("marshal %#v: %v", v, err)
				}
				if err := sch.Validate(decode(t, b)); err != nil {
					t.Errorf("marshalled %s does not validate against %s: %v", b, text, err)
				}
			}
			for _, in := range r.refused {
				if err := jsonv1.Unmarshal([]byte(in), reflect.New(r.typ).Interface()); err == nil {
					t.Fatalf("the table is wrong: the engine takes %s", in)
				}
				if !json.Valid([]byte(in)) {
					continue // not JSON at all: no validator sees it
				}
				if err := sch.Validate(decode(t, []byte(in))); err == nil {
					t.Errorf("%s, which the engine refuses, validates against %s", in, text)
				}
			}
		})
	}
}

// TestSchemaExact pins the exact schemas of a few types, as a reader of
// the generated documents sees them.
func TestSchemaExact(t *testing.T) {
	for _, c := range []struct {
		typ  reflect.Type
		want string
	}{
		{typ[*int](), `{"$schema":"https://json-schema.org/draft/2020-12/schema","maximum":9223372036854775807,"minimum":-9223372036854775808,"type":["integer","null"]}`},
		{typ[time.Time](), `{"$schema":"https://json-schema.org/draft/2020-12/schema","format":"date-time","pattern":"^[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$","type":"string"}`},
		{typ[json.RawMessage](), `{"$schema":"https://json-schema.org/draft/2020-12/schema"}`},
		{typ[*tree](), `{"$defs":{"nesting":{"additionalProperties":{"$ref":"#/$defs/nesting"},"type":["object","null"]},` +
			`"tree":{"additionalProperties":false,"properties":{"kids":{"items":{"$ref":"#/$defs/tree"},"type":["array","null"]},"name":{"type":"string"},"tags":{"$ref":"#/$defs/nesting"},"up":{"anyOf":[{"$ref":"#/$defs/tree"},{"type":"null"}]}},"required":["name"],"type":"object"}},"$schema":"https://json-schema.org/draft/2020-12/schema","anyOf":[{"$ref":"#/$defs/tree"},{"type":"null"}]}`},
		{typ[Other](), `{"$defs":{"Other":{"additionalProperties":false,"properties":{"b":{"type":"string"},"c":{"maximum":9223372036854775807,"minimum":-9223372036854775808,"type":"integer"}},"required":["b"],"type":"object"}},"$ref":"#/$defs/Other","$schema":"https://json-schema.org/draft/2020-12/schema"}`},
	} {
		s, err := For(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(s); string(got) != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.typ, got, c.want)
		}
	}
}

// TestSchemaRefused pins the errors for types JSON has no form for, which
// the engine refuses to marshal too.
func TestSchemaRefused(t *testing.T) {
	for _, ty := range []reflect.Type{typ[chan int](), typ[func()](), typ[complex128](), typ[map[float64]int](), typ[struct{ C chan int }]()} {
		if _, err := For(ty); err == nil {
			t.Errorf("%v: no error", ty)
		} else if _, merr := jsonv1.Marshal(reflect.Zero(ty).Interface()); merr == nil && ty.Kind() != reflect.Chan && ty.Kind() != reflect.Func && ty.Kind() != reflect.Map {
			t.Errorf("%v: the engine marshals it: %v", ty, fmt.Sprint(err))
		}
	}
}

type documented struct {
	Path string `json:"path" doc:"a file"`
	Up   *tree  `json:"up,omitempty" doc:"the parent"`
}

// TestBody pins Body: a named struct's object itself (with its members'
// doc tags as descriptions), its definition dropped when nothing else
// refers to it, kept for a recursive type.
func TestBody(t *testing.T) {
	var g Generator
	s, err := g.Body(typ[documented]())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(s)
	want := `{"additionalProperties":false,"properties":{"path":{"description":"a file","type":"string"},"up":{"anyOf":[{"$ref":"#/$defs/tree"},{"type":"null"}],"description":"the parent"}},"required":["path"],"type":"object"}`
	if string(got) != want {
		t.Errorf("Body:\n got %s\nwant %s", got, want)
	}
	if _, ok := g.Defs()["documented"]; ok || g.Defs()["tree"] == nil {
		t.Errorf("defs: %v", g.Defs())
	}
	var g2 Generator
	if s, _ := g2.Body(typ[tree]()); s["type"] != "object" || g2.Defs()["tree"] == nil {
		t.Errorf("recursive Body %v, defs %v", s, g2.Defs())
	}
}

type event struct {
	Kind string `json:"kind"`
	Data any    `json:"data"`
}

// DefineSchema says an event is a note or a tree, by kind.
func (event) DefineSchema(g *Generator) (Schema, error) {
	var alts []any
	for kind, t := range map[string]reflect.Type{"note": typ[tagged](), "tree": typ[tree]()} {
		s, err := g.Schema(t)
		if err != nil {
			return nil, err
		}
		alts = append(alts, Schema{"type": "object", "required": []any{"kind", "data"},
			"properties": Schema{"kind": Schema{"const": kind}, "data": s}})
	}
	return Schema{"anyOf": alts}, nil
}

// TestDefiner pins a type that says its schema with other types': they
// are defined once, and the union holds what it should.
func TestDefiner(t *testing.T) {
	s, err := For(typ[[]event]())
	if err != nil {
		t.Fatal(err)
	}
	if defs := s["$defs"].(map[string]Schema); defs["tree"] == nil || defs["tagged"] == nil {
		t.Errorf("defs %v", defs)
	}
	sch := compile(t, s)
	for in, ok := range map[string]bool{`[{"kind":"tree","data":{"name":"x"}}]`: true, `[{"kind":"tree","data":{"name":1}}]`: false, `[{"kind":"x","data":{}}]`: false} {
		if err := sch.Validate(decode(t, []byte(in))); (err == nil) != ok {
			t.Errorf("%s: %v, want valid %v", in, err, ok)
		}
	}
}
