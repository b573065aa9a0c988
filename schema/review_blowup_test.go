package schema

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Unnamed struct types (aliases), each holding two of the one before:
// twelve lines of Go.
type (
	u0  = struct{ V int }
	u1  = struct{ A, B u0 }
	u2  = struct{ A, B u1 }
	u3  = struct{ A, B u2 }
	u4  = struct{ A, B u3 }
	u5  = struct{ A, B u4 }
	u6  = struct{ A, B u5 }
	u7  = struct{ A, B u6 }
	u8  = struct{ A, B u7 }
	u9  = struct{ A, B u8 }
	u10 = struct{ A, B u9 }
	u11 = struct{ A, B u10 }
	u12 = struct{ A, B u11 }
)

// TestReviewUnnamedStructSchemaSize: an unnamed struct type is inlined at
// every use, so the schema doubles with each level: 65 KB at 8 levels,
// 1.0 MB at 12, 16.6 MB and 9 s at 16 (measured on this machine), and
// rpc.discover makes it again for every request. Defined once (as named
// structs are), it would grow with the number of types.
func TestReviewUnnamedStructSchemaSize(t *testing.T) {
	s, err := For(reflect.TypeFor[u12]())
	if err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal(s)
	if len(text) > 64<<10 {
		t.Errorf("the schema of 13 unnamed struct types is %d bytes (doubling per level); want each defined once", len(text))
	}
}
