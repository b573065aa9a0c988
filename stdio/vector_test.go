package stdio

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// closingRecorder is a recorder that Close can interrupt, so that the Conn
// writes to it directly (no pump), as it does to a net.Conn.
type closingRecorder struct{ recorder }

func (*closingRecorder) Close() error { return nil }

// TestLargeWriteWireFormat: a message of minVectorWrite bytes or more is
// written from the caller's slice, not copied into the write buffer, and
// its frame on the wire is the one a small message gets; a large line with
// line breaks in it is still compacted. After Write returns, the Conn
// keeps no reference to the message.
func TestLargeWriteWireFormat(t *testing.T) {
	big := `{"s":"` + strings.Repeat("x", minVectorWrite) + `"}`
	spaced := "{\n \"s\": \"" + strings.Repeat("y", minVectorWrite) + "\"\r\n}"
	compact := `{"s":"` + strings.Repeat("y", minVectorWrite) + `"}`
	for _, tc := range []struct {
		framing Framing
		msg     string
		want    string
	}{
		{Header, big, "Content-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big},
		{Line, big, big + "\n"},
		{Line, spaced, compact + "\n"},
	} {
		rec := &closingRecorder{}
		c := NewConn(nil, rec, Options{Framing: tc.framing})
		msg := []byte(tc.msg)
		if err := c.Write(msg); err != nil {
			t.Fatalf("%v Write of %d bytes: %v", tc.framing, len(msg), err)
		}
		if got := string(bytes.Join(rec.calls, nil)); got != tc.want {
			t.Errorf("%v Write of %d bytes wrote %d bytes, not its frame of %d (%.40q…)", tc.framing, len(msg), len(got), len(tc.want), got)
		}
		if c.wvec[0] != nil || c.wvec[1] != nil {
			t.Errorf("%v: the Conn still refers to the message after Write", tc.framing)
		}
		c.Close()
	}
	// An all-space line is refused as on the buffer's path.
	c := NewConn(nil, &closingRecorder{}, Options{Framing: Line})
	defer c.Close()
	if err := c.Write(bytes.Repeat([]byte(" "), minVectorWrite)); err == nil {
		t.Error("a large all-space line was written")
	}
}
