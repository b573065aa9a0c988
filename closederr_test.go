package jsonrpc

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

// TestClosedErrorAsErrorf pins that the error of an ended Peer reads and
// unwraps as fmt.Errorf("%w: %w", ErrClosed, cause) did before it became
// a type of its own (one allocation instead of eight).
func TestClosedErrorAsErrorf(t *testing.T) {
	wrapped := fmt.Errorf("ws: %w", io.EOF)
	for _, cause := range []error{io.EOF, wrapped, errLocalClose, ErrSlowConsumer, nil} {
		got, want := closedBy(cause), fmt.Errorf("%w: %w", ErrClosed, cause)
		if got.Error() != want.Error() {
			t.Errorf("text %q, want %q", got, want)
		}
		for _, target := range []error{ErrClosed, io.EOF, wrapped, errLocalClose, ErrSlowConsumer, ErrWriteTimeout} {
			if errors.Is(got, target) != errors.Is(want, target) {
				t.Errorf("cause %v: errors.Is(%v) = %v, want %v", cause, target, errors.Is(got, target), errors.Is(want, target))
			}
		}
	}
}
