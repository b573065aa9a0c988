package otel

import "testing"

// TestFindMember: the top-level member's value is found by its name
// (escaped or not, the last of duplicates), past values that hold
// brackets and quotes in strings, and not in a nested object.
func TestFindMember(t *testing.T) {
	for _, c := range []struct {
		obj, want string
		found, ok bool
	}{
		{`{}`, "", false, true},
		{`{"a":{"_meta":1},"b":"}\"{"}`, "", false, true},
		{` {"a" : [1,{"x":"]"}] , "_meta" : {"p":"q"} } `[1:], `{"p":"q"}`, true, true},
		{`{"\u005fmeta":true}`, `true`, true, true},
		{`{"_meta":1,"_meta":[2]}`, `[2]`, true, true},
		{`{"_meta":-1.5e3}`, `-1.5e3`, true, true},
		{`{"_meta":`, "", false, false},
		{`[1]`, "", false, false},
	} {
		m, ok := findMember([]byte(c.obj), "_meta")
		got := ""
		if m.found {
			got = c.obj[m.start:m.end]
		}
		if ok != c.ok || m.found != c.found || got != c.want {
			t.Errorf("findMember(%s) = %q, found %v, ok %v; want %q, %v, %v", c.obj, got, m.found, ok, c.want, c.found, c.ok)
		}
	}
}
