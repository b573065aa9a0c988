package jsonrpc

import (
	"fmt"
	"strconv"
)

// ID is a request id kept as the exact JSON text the sender wrote, so that it
// goes back byte for byte: a string, a number of any size or precision, or
// null. Integers are never converted through float64.
//
// The zero ID is absent: a request without an id is a notification. IDs are
// comparable and can be map keys.
type ID struct {
	raw string
}

// StringID returns the ID for the JSON string s.
func StringID(s string) ID { return ID{raw: string(appendQuote(nil, s))} }

// Int64ID returns the ID for the JSON number n.
func Int64ID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// NullID returns the null ID: a call whose id is null, which is not a
// notification.
func NullID() ID { return ID{raw: "null"} }

// IsZero reports whether the id is absent, as it is in a notification.
func (id ID) IsZero() bool { return id.raw == "" }

// IsNull reports whether the id is the JSON null.
func (id ID) IsNull() bool { return id.raw == "null" }

// String returns the id's JSON text, or "" when it is absent.
func (id ID) String() string { return id.raw }

// MarshalJSON returns the id's JSON text; an absent id marshals as null.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON keeps data as the id's text. It accepts a string, a number
// or null, as the specification allows.
func (id *ID) UnmarshalJSON(data []byte) error {
	v := trimSpace(data)
	if !validIDToken(v) || !validJSON(v) {
		return fmt.Errorf("jsonrpc: an id must be a string, number or null, not %.40q", data)
	}
	id.raw = string(v)
	return nil
}

// validIDToken reports whether a JSON value (known to be valid) has a type an
// id may have: String, Number or Null.
func validIDToken(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	switch c := v[0]; {
	case c == '"', c == 'n', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}
