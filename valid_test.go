package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	``, ` `, `{`, `}`, `[`, `]`, `{}`, `[]`, ` { } `, `[ ]`, `[,]`, `[1,]`, `{,}`, `{"a":1,}`,
	`{"a"}`, `{"a":}`, `{"a" 1}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`, `{"a":[1,{"b":null}]}`,
	`0`, `-0`, `01`, `-`, `-a`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1e5`, `1E-5`, `-0.0e+0`, `1.5e`, `2.`, `+1`,
	`true`, `tru`, `truee`, `false`, `null`, `nul`, `nulll`, `NaN`, `Infinity`,
	`""`, `"`, `"abc`, `"a\"b"`, `"a\\"`, `"a\\\"`, `"\u00e9"`, `"\u00G9"`, `"\u00e"`, `"\x"`, `"\/"`,
	`"\b\f\n\r\t"`, "\"a\tb\"", "\"a\x01b\"", "\"a\x1fb\"", "\"a\x7fb\"", "\"\xff\xfe\"", "\"é\"",
	`"12345678"`, `"1234567\"`, `"1234567\"8"`, `"123456789012345\"6789"`, `"12345678\u0041"`,
	"\"1234567\x00\"", "\"12345678901234\x10\"", `1 2`, `{} {}`, `[] x`, "\t\n\r [1] \n",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 300) + "1" + strings.Repeat("}", 300),
}

// TestValidJSONAsEncodingJSON: validJSON accepts exactly what encoding/json's
// Valid accepts, on a table of the tricky cases.
func TestValidJSONAsEncodingJSON(t *testing.T) {
	for _, in := range validCases {
		if got, want := validJSON([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("validJSON(%.60q) = %v, encoding/json says %v", in, got, want)
		}
	}
}

// FuzzValid holds validJSON to encoding/json's Valid on arbitrary bytes.
func FuzzValid(f *testing.F) {
	for _, in := range validCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json says %v", data, got, want)
		}
	})
}

// TestValidLongStrings: a quote, an escape, a bad escape or a control
// character at any offset of a long string (across plainRun's 32-byte
// steps, its words and its windows) is judged as encoding/json judges it.
func TestValidLongStrings(t *testing.T) {
	body := strings.Repeat("abcdefgh", (2*plainWindow+100)/8)
	offsets := []int{0, 1, 7, 8, 15, 16, 31, 32, 33, 39, 40, 47, 63, 64, 65, 100}
	for _, base := range []int{0, plainWindow - 40, plainWindow - 1, 2 * plainWindow} {
		for _, off := range offsets {
			at := base + off
			if at >= len(body) {
				continue
			}
			for _, ins := range []string{`"`, `\"`, `\\`, `\u00e9`, `\x`, "\x01", "\x1f", "\t", "\x7f", "é", `\`} {
				in := `["` + body[:at] + ins + body[at:] + `"]`
				if got, want := validJSON([]byte(in)), json.Valid([]byte(in)); got != want {
					t.Errorf("%q at %d of a %d-byte string: validJSON %v, encoding/json %v", ins, at, len(body), got, want)
				}
			}
		}
	}
}
