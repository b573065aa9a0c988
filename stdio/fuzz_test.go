package stdio

import (
	"bytes"
	"io"
	"slices"
	"testing"
)

// fuzzCap is the message size cap used by the fuzz targets.
const fuzzCap = 1 << 10

func FuzzHeaderFraming(f *testing.F) {
	for _, seed := range []string{
		"",
		"Content-Length: 2\r\n\r\n{}",
		"Content-Length: 59\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" +
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		"content-length: 41\n\n" + `{"jsonrpc":"2.0","method":"initialized"}`,
		"Content-Length: 2000000000\r\n\r\nabc",
		"Content-Length: 99999999999999999999\r\n\r\n{}",
		"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
		"Content-Length: 1025\r\n\r\n" + string(bytes.Repeat([]byte("x"), 1025)) + "Content-Length: 0\r\n\r\n",
		"Content-Length: 10\r\n\r\n{}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, err := decode(t, data, Header, fuzzCap)
		if err == nil {
			t.Fatal("decode ended without an error")
		}
		var valid [][]byte
		var wire bytes.Buffer
		for _, m := range msgs {
			if m == tooLarge {
				continue
			}
			if len(m) > fuzzCap {
				t.Fatalf("message of %d bytes over the %d-byte cap", len(m), fuzzCap)
			}
			valid = append(valid, []byte(m))
			encodeHeaderFrame(&wire, []byte(m))
		}
		// What was read survives a re-encode and decode unchanged.
		again, err := decode(t, wire.Bytes(), Header, fuzzCap)
		if err != io.EOF {
			t.Fatalf("decoding re-encoded messages: %v", err)
		}
		if !slices.EqualFunc(again, valid, func(a string, b []byte) bool { return a == string(b) }) {
			t.Fatalf("round trip changed messages: %q became %q", valid, again)
		}
	})
}

func FuzzLineFraming(f *testing.F) {
	for _, seed := range []string{
		"",
		"{}\n",
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"result":{}}`,
		"\n \t\r\n  ",
		"  [1, 2]  \n{\r}\n",
		string(bytes.Repeat([]byte("x"), 1025)) + "\n{}",
		string(bytes.Repeat([]byte(" "), 3000)) + "{}" + string(bytes.Repeat([]byte(" "), 3000)),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, err := decode(t, data, Line, fuzzCap)
		if err != io.EOF {
			t.Fatalf("decode of an in-memory stream ended with %v, want io.EOF", err)
		}
		if want := splitLines(data, fuzzCap); !slices.Equal(msgs, want) {
			t.Fatalf("read %q, want %q", msgs, want)
		}
		for _, m := range msgs {
			if m == tooLarge {
				continue
			}
			if len(m) > fuzzCap {
				t.Fatalf("message of %d bytes over the %d-byte cap", len(m), fuzzCap)
			}
			// Whatever Write accepts goes out as exactly one line, and
			// unchanged unless it had to be compacted.
			var wire bytes.Buffer
			if err := encodeLineFrame(&wire, []byte(m)); err != nil {
				continue
			}
			w := wire.Bytes()
			if w[len(w)-1] != '\n' || bytes.ContainsAny(w[:len(w)-1], "\r\n") {
				t.Fatalf("message %q encoded as %q, not one line", m, w)
			}
			again, err := decode(t, w, Line, fuzzCap)
			if err != io.EOF || len(again) != 1 {
				t.Fatalf("line %q decoded as %q, %v", w, again, err)
			}
			if !bytes.ContainsAny([]byte(m), "\r\n") && again[0] != m {
				t.Fatalf("round trip changed %q into %q", m, again[0])
			}
		}
	})
}

// splitLines is a plain model of Line framing: split at '\n', trim JSON
// whitespace, skip blank lines, and mark lines over limit as too large.
func splitLines(data []byte, limit int) []string {
	var out []string
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		line = bytes.Trim(line, " \t\r\n")
		switch {
		case len(line) == 0:
		case len(line) > limit:
			out = append(out, tooLarge)
		default:
			out = append(out, string(line))
		}
	}
	return out
}
