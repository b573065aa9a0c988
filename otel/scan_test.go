package otel

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

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

// TestInjectMergesInsideMeta: an existing _meta keeps its other members
// and their bytes; a traceparent already there is replaced, not repeated;
// the members outside _meta are untouched.
func TestInjectMergesInsideMeta(t *testing.T) {
	tel, err := New(Options{TraceContext: MCPTraceContext})
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	got := string(tel.inject(ctx, json.RawMessage(`{"z":"<&>", "_meta" : {"progressToken":"t&", "traceparent":"old"},"a":[1]}`)))
	want := `{"z":"<&>", "_meta" : {"progressToken":"t&","traceparent":"00-01000000000000000000000000000000-0200000000000000-01"},"a":[1]}`
	if got != want {
		t.Errorf("inject gave %s\nwant          %s", got, want)
	}
}
