package ws

import (
	"bytes"
	"errors"
	"io"
	"sync/atomic"
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
			got, err := readMessage(r, 32<<20, new(atomic.Uint64))
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
	if _, err := readMessage(io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(boom)), 32<<20, new(atomic.Uint64)); !errors.Is(err, boom) {
		t.Errorf("read error: got %v, want %v", err, boom)
	}
}

// limitedReader yields zeros, and fails as coder/websocket's limit reader
// does once it has yielded limit+1 bytes; it records the most room it was
// offered, counting what it yielded before.
type limitedReader struct {
	limit, n, offered int64
}

var errOverLimit = errors.New("over the limit")

func (r *limitedReader) Read(p []byte) (int, error) {
	r.offered = max(r.offered, r.n+int64(len(p)))
	if r.n > r.limit {
		return 0, errOverLimit
	}
	k := min(int64(len(p)), r.limit+1-r.n)
	clear(p[:k])
	r.n += k
	return int(k), nil
}

// TestReadMessageStopsAtLimit (finding 11): readMessage never grows its
// buffer past the limit and two bytes (one to read past the limit, one to
// hear the reader refuse it), however long the message claims to be: its
// read fails there, and it returns that error.
func TestReadMessageStopsAtLimit(t *testing.T) {
	for _, limit := range []int64{0, 100, 4096, 1<<20 + 3} {
		r := &limitedReader{limit: limit}
		if _, err := readMessage(r, limit, new(atomic.Uint64)); !errors.Is(err, errOverLimit) {
			t.Errorf("limit %d: got %v, want the reader's error", limit, err)
		}
		if r.offered > max(limit+2, 4096) {
			t.Errorf("limit %d: offered room for %d bytes, want at most %d", limit, r.offered, max(limit+2, 4096))
		}
	}
}
