package jsonrpc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestJSONSeamDecodesAsEncodingJSON: the engine behind the JSON seam
// decodes user types exactly as encoding/json v1 does, the promise made to
// users when it was adopted: field names match case-insensitively, unknown
// fields are ignored, numbers in an interface are float64, a null leaves a
// value alone, and what encoding/json refuses is refused.
func TestJSONSeamDecodesAsEncodingJSON(t *testing.T) {
	type inner struct {
		N int `json:"n"`
	}
	type params struct {
		Text  string          `json:"text"`
		Count int             `json:"count,omitempty"`
		Any   any             `json:"any"`
		Raw   json.RawMessage `json:"raw"`
		In    *inner          `json:"in"`
		List  []int           `json:"list"`
		Map   map[string]int  `json:"map"`
		Skip  string          `json:"-"`
		Plain string
	}
	for _, in := range []string{
		`{"text":"a","count":2}`,
		`{"TEXT":"b","Count":3}`,                      // case-insensitive names
		`{"text":"c","unknown":1}`,                    // unknown fields ignored
		`{"any":1.5}`, `{"any":12345678901234567890}`, // numbers as float64
		`{"any":{"x":[1,"y",null]}}`,
		`{"raw": [1, 2 ,3]}`,
		`{"in":{"n":7}}`, `{"in":null}`,
		`{"list":null}`, `{"list":[]}`, `{"map":{"k":1}}`,
		`{"Skip":"no"}`, `{"plain":"yes"}`,
		`{"text":"\u00e9\ud83d\ude00"}`,
		`{"count":"3"}`, `{"count":1.5}`, `{"text":1}`, `[1]`, `nul`, // refused
		`{"text":"a","text":"b"}`, // duplicate names: the last wins in v1
	} {
		var want, got params
		wantErr := json.Unmarshal([]byte(in), &want)
		gotErr := unmarshalJSON([]byte(in), &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s: encoding/json error %v, seam error %v", in, wantErr, gotErr)
			continue
		}
		if wantErr == nil && !reflect.DeepEqual(want, got) {
			t.Errorf("%s: encoding/json %+v, seam %+v", in, want, got)
		}
	}
	for _, v := range []any{
		map[string]any{"b": 1, "a": []any{"x", nil, 1.5}},
		struct {
			A string `json:"a,omitempty"`
			B []byte
			C float64
		}{B: []byte("hi"), C: 1e21},
		"<&>\u2028", []int(nil),
	} {
		want, werr := json.Marshal(v)
		got, gerr := marshalJSON(v)
		if string(want) != string(got) || (werr == nil) != (gerr == nil) {
			t.Errorf("marshal %#v: encoding/json %s (%v), seam %s (%v)", v, want, werr, got, gerr)
		}
	}
}

// TestAppendJSONEncodesAsMarshal: appendJSON writes what marshalJSON does,
// after whatever b held, for the values the library encodes.
func TestAppendJSONEncodesAsMarshal(t *testing.T) {
	type inner struct {
		S    string  `json:"s,omitempty"`
		F    float64 `json:"f"`
		HTML string  `json:"html"`
	}
	values := []any{
		nil, 1, "x", []int{1, 2}, map[string]any{"b": 1, "a": []any{true, nil}},
		inner{S: "é\u2028<>&", F: 1e21, HTML: "<script>"},
		&inner{}, json.RawMessage(`{"a" : 1}`), strings.Repeat("y", 70000),
	}
	for _, v := range values {
		want, err := marshalJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		prefix := []byte(`{"params":`)
		got, err := appendJSON(append(make([]byte, 0, 16), prefix...), v)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
			t.Errorf("%T: appendJSON wrote %.80s, Marshal %.80s", v, got, want)
		}
	}
	if _, err := appendJSON(nil, make(chan int)); err == nil {
		t.Error("appendJSON of a channel: no error")
	}
}
