package stdio

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

func frame(body string) string {
	var b bytes.Buffer
	encodeHeaderFrame(&b, []byte(body))
	return b.String()
}

func TestHeaderFraming(t *testing.T) {
	big := strings.Repeat("x", 3*bodyChunk+17) // read in growing chunks
	manyHeaders := strings.Repeat("X-Pad: y\r\n", maxHeaderLines-1)
	tests := []struct {
		name    string
		input   string
		limit   int64
		want    []string
		wantErr error
	}{
		{"clean EOF", "", 0, nil, io.EOF},
		{"one", "Content-Length: 2\r\n\r\n{}", 0, []string{"{}"}, io.EOF},
		{"two", frame("{}") + frame("[1]"), 0, []string{"{}", "[1]"}, io.EOF},
		{"content type after",
			"Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}",
			0, []string{"{}"}, io.EOF},
		{"content type before",
			"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}",
			0, []string{"{}"}, io.EOF},
		{"lowercase", "content-length: 2\r\n\r\n{}", 0, []string{"{}"}, io.EOF},
		{"uppercase", "CONTENT-LENGTH: 2\r\n\r\n{}", 0, []string{"{}"}, io.EOF},
		{"bare LF", "Content-Length: 2\n\n{}Content-Length: 1\r\n\n1", 0, []string{"{}", "1"}, io.EOF},
		{"no spaces and trailing spaces", "Content-Length:2 \t\r\n\r\n{}", 0, []string{"{}"}, io.EOF},
		{"empty body", "Content-Length: 0\r\n\r\n", 0, []string{""}, io.EOF},
		{"same length twice", "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 0, []string{"{}"}, io.EOF},
		{"body with CRLF", frame("{\r\n}\r\n"), 0, []string{"{\r\n}\r\n"}, io.EOF},
		{"big body", frame(big), 4 * bodyChunk, []string{big}, io.EOF},
		{"64 header lines", manyHeaders + frame("{}"), 0, []string{"{}"}, io.EOF},

		{"missing length", "Content-Type: x\r\n\r\n{}", 0, nil, errBadHeader},
		{"empty header block", "\r\n{}", 0, nil, errBadHeader},
		{"length abc", "Content-Length: abc\r\n\r\n{}", 0, nil, errBadHeader},
		{"length -1", "Content-Length: -1\r\n\r\n{}", 0, nil, errBadHeader},
		{"length +2", "Content-Length: +2\r\n\r\n{}", 0, nil, errBadHeader},
		{"length empty", "Content-Length: \r\n\r\n{}", 0, nil, errBadHeader},
		{"length 2 2", "Content-Length: 2 2\r\n\r\n{}", 0, nil, errBadHeader},
		{"length overflow", "Content-Length: 99999999999999999999\r\n\r\n{}", 0, nil, errBadHeader},
		{"length maxint64+1", "Content-Length: 9223372036854775808\r\n\r\n{}", 0, nil, errBadHeader},
		{"conflicting lengths", "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 0, nil, errBadHeader},
		{"no colon", "Content-Length 2\r\n\r\n{}", 0, nil, errBadHeader},
		{"header line too long", "X: " + strings.Repeat("a", maxHeaderLine) + "\r\n" + frame("{}"), 0, nil, errBadHeader},
		{"header line longer than buffer", "X: " + strings.Repeat("a", 2*readBufferSize) + "\r\n" + frame("{}"), 0, nil, errBadHeader},
		{"too many header lines", manyHeaders + "X-Pad: y\r\n" + frame("{}"), 0, nil, errBadHeader},
		{"good then bad", frame("{}") + "Content-Length: x\r\n\r\n", 0, []string{"{}"}, errBadHeader},

		{"truncated body", "Content-Length: 10\r\n\r\n{}", 0, nil, io.ErrUnexpectedEOF},
		{"truncated big body", "Content-Length: 5000000\r\n\r\n{}", 0, nil, io.ErrUnexpectedEOF},
		{"truncated header line", "Content-Len", 0, nil, io.ErrUnexpectedEOF},
		{"truncated header block", "Content-Length: 2\r\n", 0, nil, io.ErrUnexpectedEOF},
		{"truncated second message", frame("{}") + "Content-Length: 2\r\n\r\n{", 0, []string{"{}"}, io.ErrUnexpectedEOF},
		{"stray CRLF after message", frame("{}") + "\r\n", 0, []string{"{}"}, errBadHeader},

		{"too large then valid", frame("hello") + frame("{}"), 4, []string{tooLarge, "{}"}, io.EOF},
		{"too large truncated", "Content-Length: 5\r\n\r\nhel", 4, nil, io.ErrUnexpectedEOF},
		{"huge length truncated", "Content-Length: 1000000000000000000\r\n\r\nabc", 0, nil, io.ErrUnexpectedEOF},
		{"exactly the cap", frame("abcd"), 4, []string{"abcd"}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decode(t, []byte(tt.input), Header, tt.limit)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("messages = %.80q, want %.80q", got, tt.want)
			}
		})
	}
}

// TestHeaderErrorIsFinal checks that a malformed header ends the Conn: the
// same error comes back instead of parsing the rest as a new frame.
func TestHeaderErrorIsFinal(t *testing.T) {
	c := NewConn(strings.NewReader("Content-Length: x\r\n\r\n"+frame("{}")), io.Discard)
	_, err1 := c.Read()
	_, err2 := c.Read()
	if !errors.Is(err1, errBadHeader) || err2 != err1 {
		t.Fatalf("errors = %v, %v; want the same malformed-header error twice", err1, err2)
	}
}

// TestHugeContentLengthDoesNotAllocate feeds headers claiming 2 GB bodies
// followed by a few bytes, with the default cap and with a cap above the
// claim, and checks that Read fails fast without allocating the claim.
func TestHugeContentLengthDoesNotAllocate(t *testing.T) {
	input := []byte("Content-Length: 2000000000\r\n\r\nabc")
	for _, limit := range []int64{0, 4 << 30} {
		r := bytes.NewReader(input)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		c := NewConn(r, io.Discard, Options{MaxMessageSize: limit})
		_, err := c.Read()
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cap %d: error = %v, want io.ErrUnexpectedEOF", limit, err)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 4<<20 {
			t.Errorf("cap %d: Read allocated %d bytes", limit, d)
		}
		if elapsed > time.Second {
			t.Errorf("cap %d: Read took %v", limit, elapsed)
		}
	}
}

// TestOversizeHeaderMessageStreams checks that skipping a message far over
// the cap does not buffer it.
func TestOversizeHeaderMessageStreams(t *testing.T) {
	const size = 64 << 20
	input := io.MultiReader(
		strings.NewReader("Content-Length: 67108864\r\n\r\n"),
		io.LimitReader(zeros{}, size),
		strings.NewReader(frame(`{"ok":true}`)),
	)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := NewConn(input, io.Discard)
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
	if d := after.TotalAlloc - before.TotalAlloc; d > 4<<20 {
		t.Errorf("Reads allocated %d bytes", d)
	}
}

// zeros is an endless stream of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
