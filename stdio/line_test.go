package stdio

import (
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
)

func TestLineFraming(t *testing.T) {
	mib := `"` + strings.Repeat("a", 1<<20-2) + `"` // 1 MiB, far over 64 KiB
	overBuffer := strings.Repeat("b", 3*readBufferSize)
	tests := []struct {
		name    string
		input   string
		limit   int64
		want    []string
		wantErr error
	}{
		{"clean EOF", "", 0, nil, io.EOF},
		{"one", "{}\n", 0, []string{"{}"}, io.EOF},
		{"two", "{}\n[1]\n", 0, []string{"{}", "[1]"}, io.EOF},
		{"blank lines", "\n\n{}\n\n  \t\n\r\n[1]\n\n", 0, []string{"{}", "[1]"}, io.EOF},
		{"CRLF", "{}\r\n[1]\r\n", 0, []string{"{}", "[1]"}, io.EOF},
		{"final line without newline", "{}\n[1]", 0, []string{"{}", "[1]"}, io.EOF},
		{"whitespace-only trailing", "{}\n  \t \r\n  ", 0, []string{"{}"}, io.EOF},
		{"only whitespace", " \r\n\t\n  ", 0, nil, io.EOF},
		{"surrounding spaces trimmed", "  {\"a\": 1}  \t\r\n", 0, []string{`{"a": 1}`}, io.EOF},
		{"inner CR kept", "{\r}\n", 0, []string{"{\r}"}, io.EOF},
		{"1 MiB line", mib + "\n{}\n", 0, []string{mib, "{}"}, io.EOF},
		{"1 MiB final line", mib, 0, []string{mib}, io.EOF},

		{"exactly the cap", "abcd\n", 4, []string{"abcd"}, io.EOF},
		{"cap with CRLF", "abcd\r\n", 4, []string{"abcd"}, io.EOF},
		{"spaces past the cap", "   abcd       \r\n", 4, []string{"abcd"}, io.EOF},
		{"too large then valid", `{"a":"0123456789"}` + "\n{}\n", 8, []string{tooLarge, "{}"}, io.EOF},
		{"too large by one", "abcde\nab\n", 4, []string{tooLarge, "ab"}, io.EOF},
		{"too large after inner spaces", "ab    c\n", 4, []string{tooLarge}, io.EOF},
		{"too large final line", "{}\n0123456789", 4, []string{"{}", tooLarge}, io.EOF},
		{"too large over buffer", overBuffer + "\n{}\n" + overBuffer, readBufferSize,
			[]string{tooLarge, "{}", tooLarge}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decode(t, []byte(tt.input), Line, tt.limit)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("messages = %.80q, want %.80q", got, tt.want)
			}
		})
	}
}

// TestOversizeLineStreams checks that skipping a line far over the cap
// buffers no more than the cap.
func TestOversizeLineStreams(t *testing.T) {
	const limit = 1 << 20
	input := io.MultiReader(
		io.LimitReader(zeros{}, 64<<20),
		strings.NewReader("\n{\"ok\":true}\n"),
	)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := NewConn(input, io.Discard, Options{Framing: Line, MaxMessageSize: limit})
	defer c.Close()
	_, err1 := c.Read()
	msg, err2 := c.Read()
	runtime.ReadMemStats(&after)
	if !errors.Is(err1, jsonrpc.ErrMessageTooLarge) {
		t.Errorf("first Read error = %v, want ErrMessageTooLarge", err1)
	}
	if err2 != nil || string(msg) != `{"ok":true}` {
		t.Errorf("second Read = %q, %v", msg, err2)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 4*limit {
		t.Errorf("Reads allocated %d bytes", d)
	}
}

// TestLineAllocation checks that a message within the cap read in pieces
// does not allocate much more than the cap.
func TestLineAllocation(t *testing.T) {
	const limit = 3 << 20
	input := strings.Repeat("x", limit) + "\n"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := NewConn(strings.NewReader(input), io.Discard, Options{Framing: Line, MaxMessageSize: limit})
	defer c.Close()
	msg, err := c.Read()
	runtime.ReadMemStats(&after)
	if err != nil || len(msg) != limit || cap(msg) > limit {
		t.Fatalf("Read = %d bytes (cap %d), %v", len(msg), cap(msg), err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 3*limit {
		t.Errorf("Read allocated %d bytes for a %d-byte line", d, limit)
	}
}
