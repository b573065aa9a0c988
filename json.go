package jsonrpc

import "encoding/json"

// The JSON seam: every pass the library makes over JSON text, other than
// its own scanner (scan.go), goes through these three, so that the engine
// behind them can be measured and changed in one place. User types decode
// as encoding/json decodes them.

// validJSON reports whether b is one valid JSON value.
func validJSON(b []byte) bool { return json.Valid(b) }

// marshalJSON encodes v.
func marshalJSON(v any) ([]byte, error) { return json.Marshal(v) }

// unmarshalJSON decodes b into v.
func unmarshalJSON(b []byte, v any) error { return json.Unmarshal(b, v) }
