package schema

import (
	"reflect"
	"strconv"
)

// Param is one of a method's params, as OpenRPC lists them.
type Param struct {
	// Name is the param's name: a struct field's JSON name, or its
	// position ("0", "1", ...) for a Go array's elements.
	Name string
	// Schema is the param's schema.
	Schema Schema
	// Required is true for a member the Go side always writes.
	Required bool
}

// MethodParams describes a method's params as jsonrpc.Typed decodes them
// into a Go type.
type MethodParams struct {
	// Schema is the schema of the params member as a whole.
	Schema Schema
	// Structure is "by-name" (an object), "by-position" (an array),
	// "either" (a struct whose fields may also come in order), or "" when
	// the params are no fixed list (a slice, a map, any): Schema says all.
	Structure string
	// List is the params by name or position, in order; nil when Structure
	// is "".
	List []Param
}

// Params describes the params that jsonrpc.Typed decodes into t: a struct
// by name, or by position when its exported fields are its members (no
// embedded struct, nothing hidden); a Go array by position; a scalar as a
// one-element array.
func (g *Generator) Params(t reflect.Type) (MethodParams, error) {
	whole, err := g.of(t, nil)
	if err != nil {
		return MethodParams{}, err
	}
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if _, own := g.Types[base]; own {
		return MethodParams{Schema: whole}, nil
	}
	if implements(base, textUnmarshaler) && !implements(base, unmarshalerType) {
		return scalarParams(whole), nil // Typed takes it in a one-element array (TestReviewTextParamsDescribedAsTheirWireForm)
	}
	if special(base) != nil {
		return MethodParams{Schema: whole}, nil
	}
	switch base.Kind() {
	case reflect.Slice, reflect.Interface:
		return MethodParams{Schema: whole}, nil
	case reflect.Array:
		items, _ := g.of(base.Elem(), nil)
		mp := MethodParams{Schema: Schema{"type": "array", "items": items, "maxItems": base.Len()}, Structure: "by-position"}
		for i := range base.Len() {
			mp.List = append(mp.List, Param{Name: strconv.Itoa(i), Schema: items})
		}
		return mp, nil
	case reflect.Struct:
		return g.structParams(base, whole)
	case reflect.Map:
		one := Schema{"type": "array", "prefixItems": []any{whole}, "minItems": 1, "maxItems": 1}
		return MethodParams{Schema: Schema{"anyOf": []any{whole, one}}}, nil
	}
	return scalarParams(whole), nil
}

// scalarParams describes params that Typed takes as a one-element array.
func scalarParams(whole Schema) MethodParams {
	return MethodParams{
		Schema:    Schema{"type": "array", "prefixItems": []any{whole}, "minItems": 1, "maxItems": 1},
		Structure: "by-position",
		List:      []Param{{Name: "0", Schema: whole, Required: true}},
	}
}

// structParams describes a struct's params: by name, and by position too
// when the fields Typed fills in order are the object's members.
func (g *Generator) structParams(t reflect.Type, whole Schema) (MethodParams, error) {
	mp := MethodParams{Schema: whole, Structure: "by-name"}
	members := fields(t)
	var positional []reflect.StructField
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
			positional = append(positional, f)
		}
	}
	inOrder := len(positional) == len(members)
	var items []any
	for i, f := range members {
		s, err := g.of(f.typ, &f)
		if err != nil {
			return MethodParams{}, err
		}
		mp.List = append(mp.List, Param{Name: f.name, Schema: s, Required: !f.optional})
		if inOrder && (len(f.index) != 1 || positional[i].Index[0] != f.index[0] || f.quoted) {
			inOrder = false
		}
		items = append(items, s)
	}
	if inOrder {
		mp.Structure = "either"
		arr := Schema{"type": "array", "items": false}
		if len(items) > 0 {
			arr["prefixItems"] = items
		}
		mp.Schema = Schema{"anyOf": []any{whole, arr}}
	}
	return mp, nil
}
