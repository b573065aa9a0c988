package ws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// Read returns the next text message. A close by the other side with status
// 1000 (normal closure), 1001 (going away), none (1005) or 4001 "gone" (the
// module's browser client giving up a connection it takes for dead) is an
// error wrapping io.EOF, a clean end; any other ending is an error, and so is a
// binary message or a text message that is not valid UTF-8.
//
// Close unblocks Read. (The read is given no context: coder/websocket drops
// the TCP connection the moment a Read's context ends, which would lose the
// close frame that Close sends.)
func (c *Conn) Read() ([]byte, error) {
	c.readState.Add(1) // odd: a Read in progress
	data, err := c.read()
	c.readState.Add(1)
	if err != nil {
		c.markGone(err)
		return nil, err
	}
	c.readReturned()
	return data, nil
}

// read is Read without the bookkeeping of the connection's end.
func (c *Conn) read() ([]byte, error) {
	// The whole message is read (up to the read limit) even when it turns
	// out to be binary: coder/websocket's close handshake would otherwise
	// first drain the rest of it, with no deadline.
	typ, r, err := c.ws.Reader(context.Background())
	if err != nil {
		return nil, c.readError(err)
	}
	data, err := readMessage(r, c.limit, &c.readState)
	if err != nil {
		return nil, c.readError(err)
	}
	if typ != websocket.MessageText {
		c.fail(ErrBinaryMessage)
		c.closeWith(websocket.StatusPolicyViolation, "JSON-RPC messages must be text")
		return nil, ErrBinaryMessage
	}
	if !utf8.Valid(data) {
		// coder/websocket does not check; serving it would echo its ids,
		// byte for byte, in replies that a browser must refuse.
		c.fail(ErrInvalidUTF8)
		c.closeWith(websocket.StatusInvalidFramePayloadData, "text message is not valid UTF-8")
		return nil, ErrInvalidUTF8
	}
	return data, nil
}

// readMessage reads a whole message from r, which fails once it has
// yielded limit+1 bytes, into a pooled scratch buffer, and returns a copy of
// exactly its size. The buffer grows by doubling, never past limit+2
// bytes (see grow): a message over the limit costs about twice the limit
// in allocations, whatever its frame headers claim, and one within it a
// copy more. (Growing by append, about 1.25 times a step for large slices,
// costs five times the limit.)
func readMessage(r io.Reader, limit int64, progress *atomic.Uint64) ([]byte, error) {
	sp := scratchBufs.Get().(*[]byte)
	buf := (*sp)[:0]
	for {
		if len(buf) == cap(buf) {
			buf = grow(buf, limit)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if n > 0 {
			progress.Add(2) // data arrives: the other side is there
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err // buf is dropped: r may have failed mid-read
		}
	}
	if cap(buf) > maxScratch {
		scratchBufs.Put(sp) // *sp is still the buffer it was
		// Not pooled: give it away, unless it holds much more than the
		// message, which the Peer's byte budgets would not see.
		if cap(buf)-len(buf) <= len(buf)/8 {
			return buf[:len(buf):len(buf)], nil
		}
		return bytes.Clone(buf), nil
	}
	msg := bytes.Clone(buf)
	*sp = buf
	scratchBufs.Put(sp)
	return msg, nil
}

// grow returns a copy of buf with more room: twice its capacity, or
// limit+2 bytes when that is less than twice as much again, and never more
// (r yields limit+1 bytes at most, and one more byte of room is how it
// gets to say that the limit was crossed).
func grow(buf []byte, limit int64) []byte {
	most := limit + 2
	n := int64(2 * max(cap(buf), 1))
	if 2*n > most {
		n = max(most, int64(cap(buf))+1)
	}
	b := make([]byte, len(buf), n)
	copy(b, buf)
	return b
}

// scratchBufs holds the buffers readMessage reads into; none larger than
// maxScratch is kept.
var scratchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxScratch = 1 << 20

// readError explains why Read failed.
func (c *Conn) readError(err error) error {
	c.mu.Lock()
	cause := c.cause
	c.mu.Unlock()
	switch {
	case cause != nil:
		return cause
	case cleanEnd(err):
		return fmt.Errorf("%w: %w", io.EOF, err) // Read records a clean end
	case errors.Is(err, websocket.ErrMessageTooBig):
		c.readBroken.Store(true)
		return fmt.Errorf("ws: incoming message over the size limit, closed with status 1009: %w", err)
	case errors.Is(err, io.EOF):
		// The stream ended without a close frame (1006, abnormal closure):
		// not a clean end, so io.EOF must not stay in the chain. Nothing
		// else in it is worth wrapping (coder/websocket's chain here is
		// only text around io.EOF), so its text is kept, and the chain is
		// ErrConnectionLost.
		return fmt.Errorf("%w: %v", ErrConnectionLost, err)
	default:
		return fmt.Errorf("ws: %w", err)
	}
}

// cleanEnd reports whether the close frame err carries ends the connection
// normally: status 1000 (normal closure), 1001 (going away, such as a
// browser tab closing), 1005 (a close frame without a status), or 4001
// "gone" (see statusPageGone).
func cleanEnd(err error) bool {
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.Code {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
		return true
	case statusPageGone:
		return ce.Reason == reasonPageGone
	}
	return false
}

// statusPageGone and reasonPageGone are the close status and reason that
// the module's browser client (browser/jsonrpc.js) sends when it gives up
// a connection it takes for dead (silent past its heartbeat, or the
// browser offline) and reconnects: a page's normal life, so a clean end
// here (TestBrowserClientGoneIsClean). The reason is matched too, so that
// an application's own status 4001 stays an error.
const (
	statusPageGone websocket.StatusCode = 4001
	reasonPageGone                      = "gone"
)
