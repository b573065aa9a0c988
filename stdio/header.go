package stdio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/peerwire/jsonrpc"
)

// Bounds on a message's header block, so a malformed or hostile stream can
// never make the reader buffer without limit.
const (
	maxHeaderLine  = 4 << 10 // bytes in one header line, line ending included
	maxHeaderLines = 64      // header lines before the empty line
)

// bodyChunk is the largest body allocated up front. A larger body is
// allocated as its bytes arrive, so a Content-Length that lies about the
// coming data cannot make the reader allocate memory the sender never fills.
const bodyChunk = 1 << 20

// errBadHeader is wrapped by the errors that report a malformed header.
var errBadHeader = errors.New("malformed header")

// readHeaderFrame reads one header-framed message from br. A body larger
// than limit is discarded as it streams in and an error wrapping
// jsonrpc.ErrMessageTooLarge is returned.
func readHeaderFrame(br *bufio.Reader, limit int64) ([]byte, error) {
	n, err := readHeader(br)
	if err != nil {
		return nil, err
	}
	if n > limit {
		if _, err := io.CopyN(io.Discard, br, n); err != nil {
			return nil, bodyError(err)
		}
		return nil, fmt.Errorf("stdio: message of %d bytes exceeds the %d-byte cap: %w",
			n, limit, jsonrpc.ErrMessageTooLarge)
	}
	return readBody(br, n)
}

// readHeader reads a header block and returns its Content-Length. It returns
// io.EOF if the stream ends before the block's first byte.
func readHeader(br *bufio.Reader) (int64, error) {
	length := int64(-1)
	for lines := 0; ; lines++ {
		line, err := br.ReadSlice('\n')
		switch {
		case err == io.EOF && len(line) == 0 && lines == 0:
			return 0, io.EOF
		case err == io.EOF:
			return 0, fmt.Errorf("stdio: stream ended inside a header: %w", io.ErrUnexpectedEOF)
		case err == bufio.ErrBufferFull || err == nil && len(line) > maxHeaderLine:
			return 0, fmt.Errorf("stdio: %w: header line longer than %d bytes", errBadHeader, maxHeaderLine)
		case err != nil:
			return 0, fmt.Errorf("stdio: read: %w", err)
		}
		line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
		if len(line) == 0 {
			if length < 0 {
				return 0, fmt.Errorf("stdio: %w: no Content-Length", errBadHeader)
			}
			return length, nil
		}
		if lines == maxHeaderLines {
			return 0, fmt.Errorf("stdio: %w: more than %d header lines", errBadHeader, maxHeaderLines)
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, fmt.Errorf("stdio: %w: line %q has no colon", errBadHeader, line)
		}
		if !bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")) {
			continue // Content-Type and unknown headers are ignored
		}
		n, err := parseLength(bytes.TrimSpace(value))
		if err != nil {
			return 0, err
		}
		if length >= 0 && n != length {
			return 0, fmt.Errorf("stdio: %w: conflicting Content-Length values %d and %d",
				errBadHeader, length, n)
		}
		length = n
	}
}

// parseLength parses a Content-Length value: a non-empty string of decimal
// digits whose value fits in an int64.
func parseLength(v []byte) (int64, error) {
	if len(v) == 0 {
		return 0, fmt.Errorf("stdio: %w: empty Content-Length", errBadHeader)
	}
	var n int64
	for _, b := range v {
		if b < '0' || b > '9' {
			return 0, fmt.Errorf("stdio: %w: invalid Content-Length %q", errBadHeader, v)
		}
		d := int64(b - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, fmt.Errorf("stdio: %w: Content-Length %q overflows", errBadHeader, v)
		}
		n = n*10 + d
	}
	return n, nil
}

// readBody reads exactly n bytes into a new slice. Bodies over bodyChunk
// are grown as data arrives, never to more than n bytes of capacity.
func readBody(br *bufio.Reader, n int64) ([]byte, error) {
	if n <= bodyChunk {
		buf := make([]byte, n)
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, bodyError(err)
		}
		return buf, nil
	}
	buf := make([]byte, 0, bodyChunk)
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), n))
			copy(grown, buf)
			buf = grown
		}
		m, err := br.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil && int64(len(buf)) < n {
			return nil, bodyError(err)
		}
	}
	return buf, nil
}

// bodyError wraps an error met while reading or skipping a body.
func bodyError(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("stdio: stream ended inside a message body: %w", io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("stdio: read: %w", err)
}

// encodeHeaderFrame appends msg with its header to buf.
func encodeHeaderFrame(buf *bytes.Buffer, msg []byte) {
	var num [20]byte
	buf.Grow(len("Content-Length: \r\n\r\n") + len(num) + len(msg))
	buf.WriteString("Content-Length: ")
	buf.Write(strconv.AppendInt(num[:0], int64(len(msg)), 10))
	buf.WriteString("\r\n\r\n")
	buf.Write(msg)
}
