package stdio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/peerwire/jsonrpc"
)

// space is JSON's insignificant whitespace (RFC 8259, section 2).
const space = " \t\r\n"

func trimLeftSpace(b []byte) []byte  { return bytes.TrimLeft(b, space) }
func trimRightSpace(b []byte) []byte { return bytes.TrimRight(b, space) }

func allSpace(b []byte) bool { return len(trimLeftSpace(b)) == 0 }

// readLineFrame reads one newline-delimited message from br. Leading and
// trailing whitespace (including a "\r" before the "\n") is trimmed and
// whitespace-only lines are skipped. A last line without a newline is a
// message too. A message longer than limit after trimming is discarded up to
// its newline and an error wrapping jsonrpc.ErrMessageTooLarge is returned;
// the bytes buffered for it never exceed limit.
func readLineFrame(br *bufio.Reader, limit int64) ([]byte, error) {
	var (
		buf      []byte // bytes of the message from its first non-space
		started  bool   // a non-space byte of the message has been seen
		tooLarge bool
	)
	// A line longer than br's buffer is gathered in a pooled scratch
	// buffer and copied out once, rather than in a slice regrown as it
	// arrives.
	var scratch *[]byte
	defer func() {
		if scratch != nil && cap(buf) <= maxScratch {
			*scratch = buf[:0]
			scratchBufs.Put(scratch)
		}
	}()
	for {
		chunk, err := br.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
			return nil, fmt.Errorf("stdio: read: %w", err)
		}
		if !started {
			chunk = trimLeftSpace(chunk)
			started = len(chunk) > 0
		}
		if !tooLarge && len(chunk) > 0 {
			// Fast path: a whole line read in one piece is copied once.
			if buf == nil && err == nil {
				if msg := trimRightSpace(chunk); int64(len(msg)) <= limit {
					return bytes.Clone(msg), nil
				}
			}
			room := limit - int64(len(buf))
			if int64(len(chunk)) > room {
				// Bytes past the cap are fine only if they are
				// trailing whitespace; any later non-space byte
				// makes the message too large.
				if allSpace(chunk[room:]) {
					chunk = chunk[:room]
				} else {
					tooLarge = true
					buf = nil
				}
			}
			if !tooLarge {
				if scratch == nil {
					scratch = scratchBufs.Get().(*[]byte)
					buf = (*scratch)[:0]
				}
				buf = appendCapped(buf, chunk, limit)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case tooLarge:
			return nil, fmt.Errorf("stdio: line exceeds the %d-byte cap: %w",
				limit, jsonrpc.ErrMessageTooLarge)
		case !started && err == io.EOF:
			return nil, io.EOF
		case !started:
			continue // blank line
		}
		if cap(buf) > maxScratch { // not kept: the message may have it
			return trimRightSpace(buf), nil
		}
		return bytes.Clone(trimRightSpace(buf)), nil
	}
}

// scratchBufs holds the buffers long lines are gathered in; none larger
// than maxScratch is kept.
var scratchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

const maxScratch = 1 << 20

// appendCapped appends b to buf, growing buf's capacity geometrically but
// never past limit.
func appendCapped(buf, b []byte, limit int64) []byte {
	need := len(buf) + len(b)
	if need > cap(buf) {
		c := int64(max(2*cap(buf), need))
		c = min(c, limit)
		grown := make([]byte, len(buf), c)
		copy(grown, buf)
		buf = grown
	}
	return append(buf, b...)
}

// errEmptyLine is returned by Write for a message that Line framing cannot
// carry because the reader would skip it.
var errEmptyLine = errors.New("stdio: empty message cannot be sent with Line framing")

// encodeLineFrame appends msg and a newline to buf, compacting msg first if
// it contains line breaks.
func encodeLineFrame(buf *bytes.Buffer, msg []byte) error {
	if allSpace(msg) {
		return errEmptyLine
	}
	// Two vectorised scans: ContainsAny goes byte by byte.
	if bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0 {
		if err := json.Compact(buf, msg); err != nil {
			return fmt.Errorf("stdio: message has line breaks and is not valid JSON: %w", err)
		}
	} else {
		buf.Grow(len(msg) + 1)
		buf.Write(msg)
	}
	buf.WriteByte('\n')
	return nil
}
