package httprpc

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestSSEReaderStandard pins the event-stream format's rules the reader
// follows (finding 9), each stream read whole and one byte at a time (a
// CR at the end of one read and its LF at the start of the next are one
// line end): line ends LF, CRLF and lone CR; a leading BOM skipped; empty
// data (a priming event) and events of another type not dispatched, their
// id kept; retry taken when it is digits only.
func TestSSEReaderStandard(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // data of the events dispatched, in order
		lastID   string
		retry    time.Duration
	}{
		{"LF", "id: 1\ndata: a\n\n", []string{"a"}, "1", 0},
		{"CRLF", "id: 1\r\ndata: a\r\n\r\n", []string{"a"}, "1", 0},
		{"lone CR", "id: 1\rdata: a\r\r", []string{"a"}, "1", 0},
		{"mixed", "data: a\r\ndata: b\rdata: c\n\r\n", []string{"a\nb\nc"}, "", 0},
		{"BOM", "\xef\xbb\xbfdata: a\n\n", []string{"a"}, "", 0},
		{"BOM only at the start", "data: a\n\n\xef\xbb\xbfdata: b\n\n", []string{"a"}, "", 0},
		{"priming", "id: p\nretry: 250\ndata: \n\nid: q\ndata: x\n\n", []string{"x"}, "q", 250 * time.Millisecond},
		{"priming, no data line", "id: p\n\n", nil, "p", 0},
		{"two empty data lines", "data:\ndata:\n\n", []string{"\n"}, "", 0},
		{"another event type", "event: ping\ndata: x\n\nevent: message\ndata: y\n\n", []string{"y"}, "", 0},
		{"retry not digits", "retry: 1e3\ndata: x\n\n", []string{"x"}, "", 0},
		{"comment", ": hi\r\ndata: x\r\n\r\n", []string{"x"}, "", 0},
		{"an id too long", "id: 1\ndata: a\n\nid: " + strings.Repeat("x", maxEventID+1) + "\ndata: b\n\n", []string{"a", "b"}, "1", 0},
		{"an id as long as allowed", "id: " + strings.Repeat("x", maxEventID) + "\ndata: a\n\n", []string{"a"}, strings.Repeat("x", maxEventID), 0},
	} {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tc.in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			sr := newSSEReader(r, 4<<10)
			var got []string
			for {
				data, _, err := sr.next()
				if err != nil {
					if err != io.EOF {
						t.Fatalf("%s (one byte a read: %v): %v", tc.name, oneByte, err)
					}
					break
				}
				got = append(got, string(bytes.Clone(data)))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) || sr.lastID != tc.lastID || sr.retry != tc.retry {
				t.Errorf("%s (one byte a read: %v): events %q, id %q, retry %v; want %q, %q, %v", tc.name, oneByte, got, sr.lastID, sr.retry, tc.want, tc.lastID, tc.retry)
			}
		}
	}
}
