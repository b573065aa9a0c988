// Package schema makes JSON Schemas (draft 2020-12) of Go types, following
// what the library's JSON engine (encoding/json's behaviour, on the
// go-json-experiment engine) does with them:
//
//   - a struct is an object whose properties are its fields as encoding/json
//     names them (json tags, embedded structs' fields promoted by Go's
//     rules, "-" left out); a field is required unless it is omitempty or
//     omitzero or promoted through an embedded pointer (a nil one
//     marshals without them); other properties are refused (additionalProperties false);
//   - a field with the ",string" option is a string holding the text of
//     its kind's values ("true"/"false", an integer within its bounds, a
//     number); a field's doc tag
//     (`doc:"..."`) is its description;
//   - a pointer, a slice and a map may be null (they marshal so when nil);
//     []byte is a base64 string; [N]T an array of N items;
//   - integers carry the bounds of their Go type;
//   - a map is an object whose keys are strings, integers (a pattern
//     holding the key type's bounds) or
//     a key type's text (encoding.TextMarshaler);
//   - json.RawMessage and any are not constrained: {}; an interface
//     with methods (error) is null, the one value the engine unmarshals
//     into it;
//   - a type with its own JSON form is what it says (a Provider, a
//     Definer for one made of other Go types, or
//     Generator.Types for a type not yours), else a json.Marshaler is not
//     constrained and an encoding.TextMarshaler is a string (with
//     UnmarshalText and no MarshalText, or MarshalText on the pointer
//     only, a string or its kind's schema; with MarshalText and no
//     UnmarshalText, its kind's schema, what it unmarshals); time.Time is
//     a date-time string (with a pattern: upper-case T and Z, no leap
//     second, as time.Time's parser takes); the engine's Number (go-json-experiment/json/v1's) a
//     number, while encoding/json's Number is, to this engine, a string;
//   - named struct types are defined once in $defs and referred to with
//     $ref, which is how recursive types are described; an unnamed struct
//     type used more than once is defined too, as struct_N.
//
// Channels, functions, complex numbers and a field with a "format:" tag
// option, which the engine refuses to marshal, are errors. The fields of
// an embedded pointer to an unexported struct, which the engine refuses to
// unmarshal, are left out (though a non-nil one marshals them).
//
// Unmarshal is more lenient than the schemas in three
// ways, each making a schema stricter, never looser: it matches property
// names without regard to case, it takes null for any type (leaving the
// value as it was), and it ignores unknown properties and an array's extra
// elements. It is stricter in one way that JSON Schema cannot follow:
// "integer" takes a whole number written as 1.0 or 1e2, which the engine
// refuses for a Go integer (TestIntegerFractionFormIsTheDocumentedLooseness).
// TestSchemaTable holds the rules above on a table of tricky
// types: values marshalled from Go validate, values the engine refuses to
// unmarshal do not, and every schema is valid against the 2020-12
// meta-schema.
//
// Params describes the params of a method as jsonrpc.Typed decodes them
// (a struct's fields by name or by position: prefixItems).
package schema
