package stdio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"testing"

	"github.com/peerwire/jsonrpc"
)

var _ jsonrpc.Limiter = (*Conn)(nil)

// framed returns msg framed for f, as a remote would send it.
func framed(f Framing, msg []byte) []byte {
	if f == Header {
		return slices.Concat(fmt.Appendf(nil, "Content-Length: %d\r\n\r\n", len(msg)), msg)
	}
	return slices.Concat(msg, []byte("\n"))
}

// TestNegativeMaxMessageSizeMeansNoLimit pins the project's convention for
// limits: zero means the default, a negative value turns the limit off. A
// negative MaxMessageSize used to mean the default, so a message one byte
// over DefaultMaxMessageSize was refused.
func TestNegativeMaxMessageSizeMeansNoLimit(t *testing.T) {
	msg := bytes.Repeat([]byte("a"), DefaultMaxMessageSize+1)
	msg[0], msg[len(msg)-1] = '"', '"'
	for _, f := range framings {
		t.Run(f.String(), func(t *testing.T) {
			input := framed(f, msg)

			c := NewConn(bytes.NewReader(input), io.Discard, Options{Framing: f, MaxMessageSize: -1})
			defer c.Close()
			got, err := c.Read()
			if err != nil || !bytes.Equal(got, msg) {
				t.Errorf("Read with no limit = %d bytes, %v; want the %d-byte message", len(got), err, len(msg))
			}

			c = NewConn(bytes.NewReader(input), io.Discard, Options{Framing: f})
			defer c.Close()
			if _, err := c.Read(); !errors.Is(err, jsonrpc.ErrMessageTooLarge) {
				t.Errorf("Read with the default limit = %v, want ErrMessageTooLarge", err)
			}
		})
	}
}

// TestMaxMessageSizeIsTheReadLimit: the Conn tells a Peer, through
// jsonrpc.Limiter, the limit it reads with, which a remote configured alike
// applies to what we write; zero for no limit.
func TestMaxMessageSizeIsTheReadLimit(t *testing.T) {
	tests := []struct {
		set  int64
		want int
	}{
		{0, DefaultMaxMessageSize},
		{1000, 1000},
		{-1, 0},
		{math.MinInt64, 0},
		{math.MaxInt32, math.MaxInt32},
	}
	for _, tt := range tests {
		c := NewConn(nil, nil, Options{MaxMessageSize: tt.set})
		if got := c.MaxMessageSize(); got != tt.want {
			t.Errorf("MaxMessageSize with Options.MaxMessageSize %d = %d, want %d", tt.set, got, tt.want)
		}
	}
}
