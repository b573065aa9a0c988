package ws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
)

// Errors that end a connection; the Peer's Wait returns a cause wrapping
// them.
var (
	// ErrKeepalive: the keepalive found the other side gone. Either a ping
	// got no pong within PingTimeout while the Conn was being read, with
	// nothing else arriving (the other side is gone, or the connection is
	// half-open), or a ping could not be written (the other side closed or
	// reset the connection, or reads nothing), which is how a Conn that is
	// not being read finds out (see Options).
	ErrKeepalive = errors.New("ws: keepalive: the other side is gone")
	// ErrBinaryMessage: the other side sent a binary message; JSON-RPC
	// travels in text messages only. The connection is closed with status
	// 1008 (policy violation).
	ErrBinaryMessage = errors.New("ws: binary message received")
	// ErrInvalidUTF8: the other side sent a text message that is not valid
	// UTF-8, which RFC 6455 requires a text message to be. The connection
	// is closed with status 1007 (invalid frame payload data).
	ErrInvalidUTF8 = errors.New("ws: text message is not valid UTF-8")
	// ErrConnectionLost: the stream ended without a close frame (status
	// 1006, abnormal closure), as when the other side's process dies. The
	// stream's io.EOF is left out of the chain, since a Peer takes io.EOF
	// for a clean end.
	ErrConnectionLost = errors.New("ws: connection lost without a close frame")
)

// Conn carries JSON-RPC messages over a WebSocket connection, one message
// (object or batch array) per text WebSocket message. It implements
// jsonrpc.Conn. Make one with NewConn, or let Dial or Server do it.
type Conn struct {
	ws *websocket.Conn

	wmu        sync.Mutex
	writing    int           // writes in progress, under wmu
	writesDone chan struct{} // made by writeStuck; closed when writing drops to 0
	readBroken atomic.Bool   // reading stopped in the middle of a message
	limit      int64         // the read limit, Options.MaxMessageSize
	written    atomic.Uint64 // Writes that returned nil

	// readState is odd while a Read is in progress. Read adds 1 as it
	// starts and as it returns, and 2 whenever data arrives, so that a
	// value seen twice means one Read in progress with nothing arriving
	// in between (see keepalive.go).
	readState atomic.Uint64
	keepalive keepalive

	mu          sync.Mutex
	closed      bool  // no ping may start
	cause       error // set when keepalive or a binary message ended the conn
	closeCode   websocket.StatusCode
	closeReason string
	closeOnce   sync.Once
	end         error         // how the connection ended, as this Conn saw it; under mu
	ended       bool          // end is set
	gone        chan struct{} // closed once the connection has ended (see markGone)

	// transport is the connection under ws, which Close reads from when
	// it lingers (see linger) and closes at once to cut short a close
	// handshake that coder/websocket would wait 5 s for; nil for a Conn
	// made by NewConn, whose transport ws cannot reach.
	transport io.ReadWriteCloser
}

// closeTimeout bounds how long Close waits for the other side to answer its
// close frame before it drops the connection. Whoever is still there answers
// within a round trip; coder/websocket alone would wait 5 s, and a Peer's
// Close with it.
const closeTimeout = time.Second

var _ jsonrpc.Conn = (*Conn)(nil)

// NewConn wraps c, sets its read limit and starts its keepalive. The Conn
// owns c from now on.
//
// ws cannot reach the transport under a websocket.Conn made elsewhere, so
// the Close of a Conn made by NewConn may wait coder/websocket's 5 s for an
// unanswered close frame; Dial, Accept and Server make Conns whose Close is
// bounded by 1 s.
func NewConn(c *websocket.Conn, opts ...Options) *Conn {
	var o *Options
	switch len(opts) {
	case 0:
	case 1:
		o = &opts[0]
	default:
		panic("ws: more than one Options")
	}
	return newConn(c, nil, o)
}

// newConn is NewConn with the transport under c, if ws could reach it.
func newConn(c *websocket.Conn, transport io.ReadWriteCloser, opts *Options) *Conn {
	o := opts.withDefaults()
	c.SetReadLimit(o.MaxMessageSize)
	conn := &Conn{
		ws:        c,
		transport: transport,
		limit:     o.MaxMessageSize,
		closeCode: websocket.StatusNormalClosure,
		gone:      make(chan struct{}),
	}
	conn.startKeepalive(o.PingInterval, o.PingTimeout)
	return conn
}

// Read returns the next text message. A close by the other side with status
// 1000 (normal closure), 1001 (going away) or none (1005) is an error
// wrapping io.EOF, a clean end; any other ending is an error, and so is a
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
	case cleanEnd(websocket.CloseStatus(err)):
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

// cleanEnd reports whether a close status from the other side ends the
// connection normally: 1000 (normal closure), 1001 (going away, such as a
// browser tab closing) and 1005 (a close frame without a status).
func cleanEnd(code websocket.StatusCode) bool {
	switch code {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
		return true
	}
	return false
}

// Write sends msg as one text message. The write is given no context:
// coder/websocket sets up a context.AfterFunc for every write made with a
// cancellable one, four allocations a message. A write the other side does
// not take is cut short by Close (see jsonrpc.Options.WriteTimeout).
func (c *Conn) Write(msg []byte) error {
	c.wmu.Lock()
	c.writing++
	c.wmu.Unlock()
	defer func() {
		c.wmu.Lock()
		if c.writing--; c.writing == 0 && c.writesDone != nil {
			close(c.writesDone)
			c.writesDone = nil
		}
		c.wmu.Unlock()
	}()
	if err := c.ws.Write(context.Background(), websocket.MessageText, msg); err != nil {
		err = fmt.Errorf("ws: %w", err)
		c.setEnd(err)
		return err
	}
	c.written.Add(1)
	return nil
}

// Close closes the connection with a close handshake: status 1000 (normal
// closure) unless SetCloseStatus chose another. It stops the keepalive and
// waits for a ping in progress. When a write is still blocked 50 ms into
// Close (the other side takes no data), Close drops the connection instead,
// which ends that write. When the other side does not answer the close frame
// within 1 s, Close drops the connection (for a Conn made by NewConn, see
// there). After a message over the limit (refused with status 1009, which
// no handshake can follow), Close drops the connection after a linger: it
// reads and discards what still arrives, until the other side closes, for
// at most 1 s and 16 MiB, so that the close frame is not lost in a reset. No goroutine of the Conn outlives Close. Close may be called more
// than once, and concurrently; every call returns once the connection is
// closed.
//
// Close returns nil: a handshake the other side did not complete (it had
// gone, or did not answer) is no failure of this side, and a Peer's Close
// and Shutdown return what Close returns. Why the connection ended is what
// the Peer's Wait reports.
func (c *Conn) Close() error {
	c.mu.Lock()
	code, reason := c.closeCode, c.closeReason
	c.mu.Unlock()
	c.closeWith(code, reason)
	return nil
}

// closeWith closes the connection with status code, once.
func (c *Conn) closeWith(code websocket.StatusCode, reason string) error {
	var err error
	c.closeOnce.Do(func() {
		c.setEnd(errClosedHere)
		c.mu.Lock()
		c.closed = true
		c.keepalive.stop()
		c.mu.Unlock()
		switch {
		case c.writeStuck():
			// The other side takes no data: a handshake would wait for
			// the stuck write. Drop the connection, which ends the write.
			err = c.ws.CloseNow()
		case c.readBroken.Load():
			// Reading stopped in the middle of a message over the limit,
			// which coder/websocket has answered with close status 1009.
			// No handshake can complete (coder/websocket would first
			// drain the rest of the message, with no deadline, and the
			// other side's answer is lost in it), so the connection is
			// dropped, after a linger that lets the close frame arrive.
			c.linger()
			err = c.ws.CloseNow()
		default:
			err = c.handshake(code, reason)
		}
		c.keepalive.pings.Wait()
		c.markGone(errClosedHere)
	})
	return err
}

// handshake sends the close frame and waits for the answer, for at most
// closeTimeout when the Conn can drop its transport. coder/websocket's
// CloseNow cannot cut short a Close in progress (it waits for it), so the
// transport itself is closed, which fails the handshake's read at once.
func (c *Conn) handshake(code websocket.StatusCode, reason string) error {
	if c.transport == nil {
		return c.ws.Close(code, reason)
	}
	dropped := make(chan struct{})
	timer := time.AfterFunc(closeTimeout, func() {
		c.transport.Close()
		close(dropped)
	})
	err := c.ws.Close(code, reason)
	if timer.Stop() {
		return err
	}
	<-dropped // the timer's goroutine must not outlive Close
	return fmt.Errorf("ws: no close frame from the other side within %v; connection dropped", closeTimeout)
}

// lingerBytes bounds what linger reads and discards, as closeTimeout
// bounds how long it reads.
const lingerBytes = 16 << 20

// linger reads and discards what the other side still sends, until it
// closes, or for closeTimeout, or lingerBytes, whichever comes first, after
// closing the sending half of the transport where it can (a TCP or TLS
// connection): the close frame already written is followed by the end of
// the stream. Closing a socket with input unread makes the kernel reset
// the connection and drop what it has not yet sent, the close frame
// included, so that the other side would never learn why. A Conn made by
// NewConn cannot reach its transport and does not linger.
func (c *Conn) linger() {
	if c.transport == nil {
		return
	}
	if cw, ok := c.transport.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	// A timer, not a deadline: the client's transport (an HTTP response
	// body) has none. Closing it ends the Read below.
	expired := make(chan struct{})
	timer := time.AfterFunc(closeTimeout, func() {
		c.transport.Close()
		close(expired)
	})
	bp := lingerBufs.Get().(*[]byte)
	for n := 0; n < lingerBytes; {
		k, err := c.transport.Read(*bp)
		n += k
		if err != nil {
			break
		}
	}
	lingerBufs.Put(bp)
	if !timer.Stop() {
		<-expired // the timer's goroutine must not outlive Close
	}
}

var lingerBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// writeGrace is how long Close lets a write in progress finish before it
// takes the write for stuck (the other side takes no data): long enough
// for a write that is merely finishing on a healthy connection, which must
// not cost the close frame.
const writeGrace = 50 * time.Millisecond

// writeStuck reports whether a write is still in progress writeGrace after
// it is called.
func (c *Conn) writeStuck() bool {
	c.wmu.Lock()
	if c.writing == 0 {
		c.wmu.Unlock()
		return false
	}
	if c.writesDone == nil {
		c.writesDone = make(chan struct{})
	}
	done := c.writesDone
	c.wmu.Unlock()
	t := time.NewTimer(writeGrace)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
		return true
	}
}

var _ jsonrpc.Limiter = (*Conn)(nil)

// MaxMessageSize returns the Conn's read limit, Options.MaxMessageSize: a
// remote side configured alike refuses a message longer than that (close
// status 1009). It implements jsonrpc.Limiter, so that a Peer refuses to
// write such a message rather than lose the connection over it.
func (c *Conn) MaxMessageSize() int {
	return int(min(c.limit, math.MaxInt))
}

// SetCloseStatus chooses the status and reason Close sends, such as
// websocket.StatusGoingAway when a server shuts down.
func (c *Conn) SetCloseStatus(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	c.closeCode, c.closeReason = code, reason
	c.mu.Unlock()
}

// errClosedHere is how a connection ended that this side closed first (its
// Peer ended, for a reason only the Peer knows: see its Wait).
var errClosedHere = errors.New("ws: connection closed by this side")

// setEnd records how the connection ended, if nothing has yet: err, or nil
// for a clean end.
func (c *Conn) setEnd(err error) {
	c.mu.Lock()
	c.setEndLocked(err)
	c.mu.Unlock()
}

func (c *Conn) setEndLocked(err error) {
	if c.ended {
		return
	}
	c.ended = true
	if !errors.Is(err, io.EOF) {
		c.end = err
	}
}

// markGone records how the connection ended, as setEnd does, and closes
// gone: the connection has ended (a Read failed, Close was called, or the
// keepalive dropped it), so that a Read from now on fails at once.
func (c *Conn) markGone(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setEndLocked(err)
	select {
	case <-c.gone:
	default:
		close(c.gone)
	}
}

// endCause returns how the connection ended as this Conn saw it: nil for a
// clean end (or while it has not ended), else the failed read or write, the
// keepalive's finding, or errClosedHere.
func (c *Conn) endCause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.end
}

// fail records why the connection is ending, if nothing else has yet.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.cause == nil {
		c.cause = err
	}
	c.mu.Unlock()
}
