package schema

import (
	"fmt"
	"maps"
	"reflect"
)

// unnamed makes the schema of an unnamed struct type (struct{ ... } or an
// alias of one). Its first use gets the object itself, as Go has no name
// for it; a second use defines it ("struct_1", ...) and turns the first
// use, in place, into a reference to the definition, so that a type is
// written once however often it is used: nested unnamed types inlined at
// every use would double the schema at each level
// (TestReviewUnnamedStructSchemaSize).
func (g *Generator) unnamed(t reflect.Type) (Schema, error) {
	if name, ok := g.names[t]; ok {
		return g.ref(name), nil
	}
	if first, ok := g.inline[t]; ok {
		name := g.anonName(t)
		if g.defs == nil {
			g.defs = make(map[string]Schema)
		}
		g.defs[name] = maps.Clone(first)
		clear(first)
		maps.Copy(first, g.ref(name))
		delete(g.inline, t)
		return g.ref(name), nil
	}
	s, err := g.body(t)
	if err != nil {
		return nil, err
	}
	if s["properties"] == nil {
		return s, nil // struct{}: as short as a reference
	}
	if g.inline == nil {
		g.inline = make(map[reflect.Type]Schema)
	}
	g.inline[t] = s
	return s, nil
}

// anonName names the definition of an unnamed struct type: struct_N, the
// first N not taken.
func (g *Generator) anonName(t reflect.Type) string {
	if g.names == nil {
		g.names, g.taken = make(map[reflect.Type]string), make(map[string]reflect.Type)
	}
	var name string
	for {
		g.anon++
		name = fmt.Sprintf("struct_%d", g.anon)
		if g.taken[name] == nil {
			break
		}
	}
	g.names[t], g.taken[name] = name, t
	return name
}
