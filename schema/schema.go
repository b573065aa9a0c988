package schema

import (
	"encoding"
	stdjson "encoding/json"
	"fmt"
	"maps"
	"math"
	"path"
	"reflect"
	"regexp"
	"strings"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Schema is a JSON Schema as a JSON object: its keywords and their values,
// which marshal with encoding/json (keys sorted, so the same types give
// the same text).
type Schema = map[string]any

// Provider is implemented by a type that says its own schema: the JSON it
// marshals to and unmarshals from, which the generator cannot see (a
// json.Marshaler's, say). The method is called on a zero value.
type Provider interface {
	JSONSchema() Schema
}

// Definer is implemented by a type that says its own schema in terms of
// other Go types, whose schemas it asks g for (so that they are defined
// once and referred to): a union of objects, say, which Go has no type
// for. The method is called on a zero value.
type Definer interface {
	DefineSchema(g *Generator) (Schema, error)
}

// Draft is the $schema of the 2020-12 draft, which the schemas follow.
const Draft = "https://json-schema.org/draft/2020-12/schema"

// A Generator makes the schemas of Go types that share one set of
// definitions: a named struct type is defined once, under a name derived
// from the Go type's, and every schema that holds it refers to it. Its
// zero value is ready to use, with definitions under #/$defs/. A
// Generator is not safe for concurrent use.
type Generator struct {
	// RefPrefix is what the references to definitions begin with; default
	// "#/$defs/" (OpenRPC's are under "#/components/schemas/").
	RefPrefix string
	// Types gives the schemas of types that are not yours to make
	// Providers; they take precedence over everything else. Default none.
	Types map[reflect.Type]Schema

	defs  map[string]Schema
	names map[reflect.Type]string // the name of every type defined or being defined
	taken map[string]reflect.Type
	busy  map[reflect.Type]bool // types whose schema is being made
	refd  map[reflect.Type]bool // busy types referred to from within: they get a definition
	// inline holds the schema of each unnamed struct type used once so
	// far, where it was used: a second use defines it (unnamed.go).
	inline map[reflect.Type]Schema
	anon   int // unnamed struct types defined so far
}

// For returns the schema of t, self-contained: with $schema, and its
// definitions in $defs.
func For(t reflect.Type) (Schema, error) {
	var g Generator
	s, err := g.Schema(t)
	if err != nil {
		return nil, err
	}
	out := Schema{"$schema": Draft}
	for k, v := range s {
		out[k] = v
	}
	if len(g.defs) > 0 {
		out["$defs"] = g.Defs()
	}
	return out, nil
}

// Schema returns the schema of t, which may refer to the Generator's
// definitions (Defs).
func (g *Generator) Schema(t reflect.Type) (Schema, error) {
	if t == nil {
		return nil, fmt.Errorf("schema: nil type")
	}
	return g.of(t, nil)
}

// Defs returns the definitions that the schemas made so far refer to, by
// name. The map is the Generator's: do not change it.
func (g *Generator) Defs() map[string]Schema { return g.defs }

var (
	marshalerType     = reflect.TypeFor[stdjson.Marshaler]()
	unmarshalerType   = reflect.TypeFor[stdjson.Unmarshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler   = reflect.TypeFor[encoding.TextUnmarshaler]()
	providerType      = reflect.TypeFor[Provider]()
	definerType       = reflect.TypeFor[Definer]()
	timeType          = reflect.TypeFor[time.Time]()
	// The engine's Number is a number; encoding/json's is a string to it,
	// unless the two are one (as they are once encoding/json runs on v2).
	numberType = reflect.TypeFor[jsonv1.Number]()
)

// implements reports whether t or *t has the method set of iface.
func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(iface)
}

// of makes t's schema; field is the struct field t is the type of, or nil.
func (g *Generator) of(t reflect.Type, field *fieldInfo) (Schema, error) {
	if field != nil && field.quoted {
		if s := quoted(t); s != nil {
			return s, nil
		}
	}
	if s, ok := g.Types[t]; ok {
		return s, nil
	}
	if t.Kind() == reflect.Pointer {
		s, err := g.of(t.Elem(), nil)
		if err != nil {
			return nil, err
		}
		return nullable(s), nil
	}
	if implements(t, definerType) {
		return g.define(t, false, func() (Schema, error) {
			v := reflect.New(t)
			if t.Implements(definerType) {
				v = v.Elem()
			}
			return v.Interface().(Definer).DefineSchema(g)
		})
	}
	if s := special(t); s != nil {
		return s, nil
	}
	if textAsymmetric(t) {
		return g.textOr(t)
	}
	return g.plain(t)
}

// plain makes the schema of t by its kind: a reference for a named
// composite type, the schema itself otherwise.
func (g *Generator) plain(t reflect.Type) (Schema, error) {
	if t.Name() == "" && t.Kind() == reflect.Struct {
		return g.unnamed(t)
	}
	if t.Name() != "" && (t.Kind() == reflect.Struct || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array) {
		return g.named(t)
	}
	return g.body(t)
}

// timePattern narrows date-time (RFC 3339) to what time.Time's parser
// takes: an upper-case T and Z, no leap second
// (TestReviewDateTimeTakesWhatTimeRefuses).
const timePattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`

// special returns the schema of a type with a JSON form of its own, or nil.
func special(t reflect.Type) Schema {
	switch {
	case t == timeType:
		return Schema{"type": "string", "format": "date-time", "pattern": timePattern}
	case t == numberType:
		return Schema{"type": "number"}
	case implements(t, providerType):
		v := reflect.New(t)
		if t.Implements(providerType) {
			v = v.Elem()
		}
		return v.Interface().(Provider).JSONSchema()
	case implements(t, marshalerType) || implements(t, unmarshalerType):
		return Schema{} // json.RawMessage among them: its own JSON, never guessed at
	case (implements(t, textMarshalerType) || implements(t, textUnmarshaler)) && !textAsymmetric(t):
		return Schema{"type": "string"}
	}
	return nil
}

// textAsymmetric reports whether t's text methods make it a string one
// way and not the other: UnmarshalText without MarshalText (it marshals as
// its kind), MarshalText without UnmarshalText (it unmarshals as its
// kind), or MarshalText on the pointer only (a value that is not
// addressable marshals as its kind).
func textAsymmetric(t reflect.Type) bool {
	m, u := implements(t, textMarshalerType), implements(t, textUnmarshaler)
	return m != u || m && t.Kind() != reflect.Pointer && !t.Implements(textMarshalerType)
}

// textOr makes the schema of a textAsymmetric type: what the engine
// unmarshals, plus what it marshals. With only MarshalText, a string is
// what it marshals and never unmarshals: the schema is its kind's
// (TestReviewMarshalTextOnlyRefusesStrings). Otherwise a string or its
// kind (TestReviewUnmarshalTextOnlyMarshalsAsNumber,
// TestReviewPointerMarshalTextOnValue).
func (g *Generator) textOr(t reflect.Type) (Schema, error) {
	s, err := g.plain(t)
	if err != nil || !implements(t, textUnmarshaler) {
		return s, err
	}
	return Schema{"anyOf": []any{Schema{"type": "string"}, s}}, nil
}

// quoted is the schema of a field with the ",string" option, or nil if
// the option does not apply to t.
func quoted(t reflect.Type) Schema {
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	switch base.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if base.Name() != "" && special(base) != nil {
			return nil
		}
		s := quotedText(base)
		if t.Kind() == reflect.Pointer {
			return nullable(s)
		}
		return s
	}
	return nil
}

// quotedText is the schema of the string a ",string" field of kind t's is:
// the text of a value of t (TestReviewStringOptionTakesAnyString).
func quotedText(t reflect.Type) Schema {
	switch t.Kind() {
	case reflect.Bool:
		return Schema{"type": "string", "enum": []any{"true", "false"}}
	case reflect.String:
		return Schema{"type": "string"}
	case reflect.Float32, reflect.Float64:
		return Schema{"type": "string", "pattern": `^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`}
	}
	return Schema{"type": "string", "pattern": intPattern(t, true)}
}

// nullable adds null to the values s accepts.
func nullable(s Schema) Schema {
	if len(s) == 0 {
		return s
	}
	switch ty := s["type"].(type) {
	case string:
		if s["$ref"] == nil && s["anyOf"] == nil && s["enum"] == nil && s["const"] == nil {
			out := Schema{}
			for k, v := range s {
				out[k] = v
			}
			out["type"] = []any{ty, "null"}
			return out
		}
	case []any:
		for _, t := range ty {
			if t == "null" && s["enum"] == nil && s["const"] == nil {
				return s
			}
		}
	}
	return Schema{"anyOf": []any{s, Schema{"type": "null"}}}
}

// named makes the schema of a named composite type: a reference to its
// definition for a struct (and for any type that refers to itself), the
// schema itself otherwise.
func (g *Generator) named(t reflect.Type) (Schema, error) {
	return g.define(t, t.Kind() == reflect.Struct, func() (Schema, error) { return g.body(t) })
}

// define makes t's schema with body: a reference to its definition if
// always is true or t refers to itself (a Definer through a slice, say:
// TestReviewRecursiveDefinerTerminates), the schema itself otherwise.
func (g *Generator) define(t reflect.Type, always bool, body func() (Schema, error)) (Schema, error) {
	if name, ok := g.names[t]; ok {
		if g.busy[t] {
			g.refd[t] = true
		}
		return g.ref(name), nil
	}
	if g.busy[t] {
		g.refd[t] = true
		return g.ref(g.name(t)), nil
	}
	if g.busy == nil {
		g.busy, g.refd = make(map[reflect.Type]bool), make(map[reflect.Type]bool)
	}
	if always {
		g.name(t)
	}
	g.busy[t] = true
	s, err := body()
	delete(g.busy, t)
	if err != nil {
		if name, ok := g.names[t]; ok { // never defined: nothing may refer to it
			delete(g.names, t)
			delete(g.taken, name)
		}
		return nil, err
	}
	if !always && !g.refd[t] {
		return s, nil
	}
	name := g.name(t)
	if g.defs == nil {
		g.defs = make(map[string]Schema)
	}
	g.defs[name] = s
	return g.ref(name), nil
}

func (g *Generator) ref(name string) Schema {
	prefix := g.RefPrefix
	if prefix == "" {
		prefix = "#/$defs/"
	}
	return Schema{"$ref": prefix + name}
}

var (
	unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.]+`)
	// qualifier is an import path and package name before a type's name,
	// as a generic type's name has them for its type arguments.
	qualifier = regexp.MustCompile(`[^\[\],*\s]*\.`)
)

// name returns t's definition's name, chosen on first use: the Go type's
// name (a generic one's type arguments without their import paths:
// Page_Note), or with its package's name when another type has the same
// name. A document names no import path: it is no client's business
// (TestReviewDocumentNamesNoGoPackagePaths).
func (g *Generator) name(t reflect.Type) string {
	if name, ok := g.names[t]; ok {
		return name
	}
	if g.names == nil {
		g.names, g.taken = make(map[reflect.Type]string), make(map[string]reflect.Type)
	}
	short := qualifier.ReplaceAllString(t.Name(), "")
	name := strings.Trim(unsafeName.ReplaceAllString(short, "_"), "_")
	if _, clash := g.taken[name]; clash {
		name = strings.Trim(unsafeName.ReplaceAllString(path.Base(t.PkgPath())+"_"+short, "_"), "_")
		for i := 2; g.taken[name] != nil; i++ {
			name = fmt.Sprintf("%s_%d", strings.TrimRight(name, "_0123456789"), i)
		}
	}
	g.names[t], g.taken[name] = name, t
	return name
}

// body makes the schema of t itself (not a reference to it).
func (g *Generator) body(t reflect.Type) (Schema, error) {
	switch t.Kind() {
	case reflect.Bool:
		return Schema{"type": "boolean"}, nil
	case reflect.String:
		return Schema{"type": "string"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return Schema{"type": "integer", "minimum": int64(-1) << (bits - 1), "maximum": int64(1)<<(bits-1) - 1}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return Schema{"type": "integer", "minimum": 0, "maximum": uint64(math.MaxUint64) >> (64 - t.Bits())}, nil
	case reflect.Float32:
		return Schema{"type": "number", "minimum": -math.MaxFloat32, "maximum": math.MaxFloat32}, nil
	case reflect.Float64:
		return Schema{"type": "number"}, nil
	case reflect.Interface:
		if t.NumMethod() > 0 {
			// the engine unmarshals only null into an interface with methods
			// (an error, say): TestReviewNonEmptyInterfaceTakesAnything
			return Schema{"type": "null"}, nil
		}
		return Schema{}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !implements(t.Elem(), marshalerType) && !implements(t.Elem(), textMarshalerType) {
			return Schema{"type": []any{"string", "null"}, "contentEncoding": "base64"}, nil
		}
		items, err := g.of(t.Elem(), nil)
		if err != nil {
			return nil, err
		}
		return Schema{"type": []any{"array", "null"}, "items": items}, nil
	case reflect.Array:
		items, err := g.of(t.Elem(), nil)
		if err != nil {
			return nil, err
		}
		return Schema{"type": "array", "items": items, "minItems": t.Len(), "maxItems": t.Len()}, nil
	case reflect.Map:
		return g.mapOf(t)
	case reflect.Struct:
		return g.structOf(t)
	}
	return nil, fmt.Errorf("schema: %v: JSON has no form for a %v", t, t.Kind())
}

// mapOf makes the schema of a map: an object, its keys as the engine
// writes them.
func (g *Generator) mapOf(t reflect.Type) (Schema, error) {
	values, err := g.of(t.Elem(), nil)
	if err != nil {
		return nil, err
	}
	s := Schema{"type": []any{"object", "null"}, "additionalProperties": values}
	k := t.Key()
	switch {
	case k.Kind() == reflect.String:
	case implements(k, textMarshalerType):
	case k.Kind() >= reflect.Int && k.Kind() <= reflect.Uintptr: // the key's bounds: TestReviewIntegerMapKeyOutOfRange
		s["propertyNames"] = Schema{"pattern": intPattern(k, false)}
	default:
		return nil, fmt.Errorf("schema: %v: JSON has no form for a map keyed by %v", t, k)
	}
	return s, nil
}

// described returns s with a description.
func described(s Schema, doc string) Schema {
	out := Schema{"description": doc}
	for k, v := range s {
		out[k] = v
	}
	return out
}

// Body returns the schema of t itself: for a named struct, its object
// rather than a reference to its definition (what an MCP tool's
// inputSchema must be: an object at the top). The definition stays in
// Defs only if something refers to it.
func (g *Generator) Body(t reflect.Type) (Schema, error) {
	_, before := g.names[t]
	s, err := g.Schema(t)
	if err != nil {
		return nil, err
	}
	if _, ok := s["$ref"].(string); !ok || len(s) != 1 || t.Kind() != reflect.Struct {
		return s, nil
	}
	if t.Name() == "" && t.Kind() == reflect.Struct {
		return maps.Clone(s), nil // its first use, which a second would make a $ref
	}
	name := g.names[t]
	body := g.defs[name]
	if !before && !g.refd[t] {
		delete(g.defs, name)
		if len(g.defs) == 0 {
			g.defs = nil
		}
	}
	return body, nil
}

// structOf makes the schema of a struct: an object of its fields.
func (g *Generator) structOf(t reflect.Type) (Schema, error) {
	props := Schema{}
	var required []any
	for _, f := range fields(t) {
		if f.refused != "" { // TestReviewUnsupportedTagOptionRefused
			return nil, fmt.Errorf("%v.%s: the JSON engine refuses the tag option %q", t, f.goName, f.refused)
		}
		s, err := g.of(f.typ, &f)
		if err != nil {
			return nil, fmt.Errorf("%v.%s: %w", t, f.goName, err)
		}
		if f.doc != "" {
			s = described(s, f.doc)
		}
		props[f.name] = s
		if !f.optional {
			required = append(required, f.name)
		}
	}
	s := Schema{"type": "object", "additionalProperties": false}
	if len(props) > 0 {
		s["properties"] = props
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}
