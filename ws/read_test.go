package ws

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadMessageWholeAndOwn: readMessage returns the whole message, in a
// slice of its own (not the pooled scratch), whatever its size and however
// the reader splits it; a read error is returned as is.
func TestReadMessageWholeAndOwn(t *testing.T) {
	var prev []byte
	for _, n := range []int{0, 1, 4095, 4096, 4097, 100_000, 3 << 20} {
		want := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		for _, r := range []io.Reader{bytes.NewReader(want), iotest.OneByteReader(bytes.NewReader(want)), iotest.HalfReader(bytes.NewReader(want))} {
			got, err := readMessage(r)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%d bytes: got %d bytes, %v", n, len(got), err)
			}
			if len(prev) > 0 && len(got) > 0 && &prev[0] == &got[0] {
				t.Errorf("%d bytes: the same backing array as the previous message", n)
			}
			prev = got
		}
	}
	boom := errors.New("boom")
	if _, err := readMessage(io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(boom))); !errors.Is(err, boom) {
		t.Errorf("read error: got %v, want %v", err, boom)
	}
}
