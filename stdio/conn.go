package stdio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/internal/msgsize"
)

// Framing selects how messages are delimited on the byte stream.
type Framing int

const (
	// Header framing precedes each message with MIME-like headers, as the
	// Language Server Protocol does: "Content-Length: N\r\n\r\n" followed by
	// exactly N bytes of body. It is the zero value of Framing.
	Header Framing = iota

	// Line framing sends one message per line, terminated by '\n', as the
	// Model Context Protocol's stdio transport does (newline-delimited JSON).
	Line
)

// String returns the name of the framing.
func (f Framing) String() string {
	switch f {
	case Header:
		return "Header"
	case Line:
		return "Line"
	}
	return fmt.Sprintf("Framing(%d)", int(f))
}

// DefaultMaxMessageSize is the cap on an incoming message's size used when
// Options.MaxMessageSize is zero: 32 MiB, the ws transport's cap too.
const DefaultMaxMessageSize = msgsize.Default

// DefaultGracePeriod is how long Close waits for a child process started by
// Command to exit on its own, and then to exit on SIGTERM, when
// Options.GracePeriod is zero.
const DefaultGracePeriod = 2 * time.Second

// Options configures a Conn. NewConn, Stdio and Command take at most one;
// none, like the zero Options, means all defaults. As everywhere in this
// module, a zero field means its default and a negative limit or timeout
// turns it off.
type Options struct {
	// Framing selects how messages are delimited. The zero value is Header;
	// a value other than Header or Line makes NewConn, Stdio and Command
	// panic.
	Framing Framing

	// MaxMessageSize caps the size in bytes of an incoming message. A
	// larger message is skipped without being buffered and Read returns an
	// error wrapping jsonrpc.ErrMessageTooLarge. Zero means
	// DefaultMaxMessageSize; a negative value means no cap, so that a
	// message of any size is read whole into memory.
	MaxMessageSize int64

	// GracePeriod is used only by Conns made by Command: it is how long
	// Close waits for the child (and its process group) to end after
	// closing its stdin before it sends SIGTERM, and again after SIGTERM
	// before it sends SIGKILL (see Command). Zero means DefaultGracePeriod;
	// a negative value means no grace: SIGKILL at once.
	GracePeriod time.Duration
}

// noLimit is the cap of a Conn whose Options.MaxMessageSize is negative: no
// message is that long.
const noLimit = math.MaxInt64

// readBufferSize is the size of the bufio.Reader in front of the stream. It
// also bounds how many bytes are buffered while looking for a line's end.
const readBufferSize = 64 << 10

// maxRetainedWriteBuffer bounds the capacity of the write buffer kept
// between calls to Write, so one huge message does not pin its memory.
const maxRetainedWriteBuffer = 64 << 10

// A Conn is a jsonrpc.Conn over a byte stream: a reader and a writer, the
// process's standard input and output, or a child process's pipes.
//
// Read must be called from one goroutine at a time; Write may be called
// concurrently (calls are serialised); Close may be called at any time, any
// number of times, concurrently with Read and Write.
type Conn struct {
	framing Framing
	max     int64
	r       io.Reader
	w       io.Writer

	rmu   sync.Mutex // guards br and rerr
	br    *bufio.Reader
	rerr  error // sticky fatal read error
	rpump *pump // reads r when Close cannot interrupt it, or nil

	wmu    sync.Mutex // guards wbuf, wvec and whdr, and serialises writes
	wbuf   bytes.Buffer
	wpump  *pump     // writes to w when Close cannot interrupt it, or nil
	vector bool      // w writes a net.Buffers in one writev: see writeVector
	wvec   [2][]byte // a large message's frame, written without a copy
	whdr   [40]byte  // its header

	closed    atomic.Bool
	closeOnce sync.Once
	closeDone chan struct{}
	closeErr  error
	closeFn   func() error

	proc *process // non-nil for Conns made by Command
}

var (
	_ jsonrpc.Conn    = (*Conn)(nil)
	_ jsonrpc.Limiter = (*Conn)(nil)
	_ jsonrpc.Watcher = (*Conn)(nil)
)

// NewConn returns a Conn that reads messages from r and writes them to w.
// Close closes r and w if they implement io.Closer, each once (once in all
// when r and w are the same value).
//
// Close makes a pending Read or Write return promptly, with one limit: when
// r or w is an io.Closer, that relies on closing it unblocking its Read or
// Write, as it does for net.Conn, io.Pipe and pipes made by os.Pipe but not
// for a terminal, say. When r or w is not an io.Closer, the Conn calls its Read or Write on a goroutine of
// its own, started by the first Read or Write, so that a pending call can be
// abandoned. That costs a hand-over between goroutines per call to r.Read
// (which fills a 64 KiB buffer) and per Write, but no allocation. Such a
// goroutine lives until Close, so a Conn over them must be closed; the
// reader's also ends once Read has returned a final error. A call to r.Read
// or w.Write under way at Close cannot be interrupted: its goroutine
// outlives Close until that call returns, then ends without another.
func NewConn(r io.Reader, w io.Writer, opts ...Options) *Conn {
	c := newConn(r, w, oneOf(opts))
	if _, ok := r.(io.Closer); !ok && r != nil {
		c.rpump = newPump(r.Read)
		c.br = bufio.NewReaderSize(c.rpump, readBufferSize)
	}
	if _, ok := w.(io.Closer); !ok && w != nil {
		c.wpump = newPump(w.Write)
	}
	c.vector = vectored(w)
	c.closeFn = func() error { return closeBoth(r, w) }
	return c
}

// Stdio returns a Conn over standard input and output, for a program that
// is itself the server (or client) of a stdio transport. Close closes both.
//
// On Unix, when standard input is a pipe or a socket (as when an editor or
// an agent host starts the program), Close interrupts a pending Read, so a
// Peer on it can be closed at any time, from a handler too. When it is a
// terminal or a file, and on other systems, a pending Read returns only once
// input arrives or the stream ends.
func Stdio(opts ...Options) *Conn {
	in, release := openStdin()
	c := newConn(in, os.Stdout, oneOf(opts))
	c.closeFn = func() error {
		werr := os.Stdout.Close()
		if rerr := release(); werr == nil {
			werr = rerr
		}
		return werr
	}
	return c
}

// oneOf returns a pointer to the one Options given, or nil for none.
func oneOf(opts []Options) *Options {
	switch len(opts) {
	case 0:
		return nil
	case 1:
		return &opts[0]
	}
	panic("stdio: more than one Options")
}

func newConn(r io.Reader, w io.Writer, opts *Options) *Conn {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Framing != Header && o.Framing != Line {
		panic(fmt.Sprintf("stdio: invalid framing %v", o.Framing))
	}
	switch {
	case o.MaxMessageSize == 0:
		o.MaxMessageSize = DefaultMaxMessageSize
	case o.MaxMessageSize < 0:
		o.MaxMessageSize = noLimit
	}
	return &Conn{
		framing:   o.Framing,
		max:       o.MaxMessageSize,
		r:         r,
		w:         w,
		br:        bufio.NewReaderSize(r, readBufferSize),
		closeDone: make(chan struct{}),
	}
}

// Read returns the next message in a newly allocated slice.
//
// It returns io.EOF when the stream ends cleanly between messages, an error
// wrapping jsonrpc.ErrMessageTooLarge when a message over the size cap was
// skipped (the Conn stays usable), an error wrapping io.ErrUnexpectedEOF
// when the stream ends inside a message, and an error wrapping both
// net.ErrClosed and os.ErrClosed once the Conn is closed (Close is how a
// pending Read is stopped; see NewConn for its limits). Any error other than
// ErrMessageTooLarge is final.
func (c *Conn) Read() ([]byte, error) {
	if c.closed.Load() {
		return nil, errClosed
	}

	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return nil, c.rerr
	}
	var msg []byte
	var err error
	switch c.framing {
	case Header:
		msg, err = readHeaderFrame(c.br, c.max)
	case Line:
		msg, err = readLineFrame(c.br, c.max)
	}
	if err == nil {
		return msg, nil
	}
	if err == io.EOF && c.proc != nil {
		err = c.proc.endOfOutput()
	}
	switch {
	case c.closed.Load():
		err = errClosed
	case errors.Is(err, jsonrpc.ErrMessageTooLarge):
		return nil, err
	}
	c.rerr = err
	c.rpump.stop() // nothing will be read again
	return nil, err
}

// Write sends msg as one frame, header (or line break) included, in a
// single call to the underlying writer's Write method; to a *net.TCPConn
// or *net.UnixConn, a frame of 16 KiB or more goes out instead in a single
// vectored write (writev) of the header and msg itself, without copying
// msg. Either way the writer's own lock is held for the whole frame, so a
// concurrent Write to the same *os.File or net.Conn (a logger sharing
// os.Stdout, say) lands before or after the frame, never inside it (see
// the package doc for what another process may do). It does not retain
// msg. With Line framing, a msg containing newlines is compacted first
// (see json.Compact), so it must be valid JSON. Close stops a pending
// Write.
func (c *Conn) Write(msg []byte) error {
	if c.closed.Load() {
		return errClosed
	}

	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(msg) >= minVectorWrite && c.vector {
		if err := c.writeVector(msg); err != errNotVector {
			return err
		}
	}
	c.wbuf.Reset()
	var err error
	switch c.framing {
	case Header:
		encodeHeaderFrame(&c.wbuf, msg)
	case Line:
		err = encodeLineFrame(&c.wbuf, msg)
	}
	if err == nil {
		_, err = c.writeFrame(c.wbuf.Bytes())
	}
	// After a failure the buffer is dropped, not reused: an abandoned
	// w.Write may still be reading it.
	if err != nil || c.wbuf.Cap() > maxRetainedWriteBuffer {
		c.wbuf = bytes.Buffer{}
	}
	if err != nil {
		if c.closed.Load() {
			return errClosed
		}
		return fmt.Errorf("stdio: write: %w", err)
	}
	return nil
}

// RemoteAddr returns the remote address of the reader the Conn was made
// on, when it is a net.Conn (a TCP or Unix socket), or nil. It implements
// jsonrpc.RemoteAddresser (network.peer.address in the otel module's
// spans).
func (c *Conn) RemoteAddr() net.Addr {
	if nc, ok := c.r.(interface{ RemoteAddr() net.Addr }); ok {
		return nc.RemoteAddr()
	}
	return nil
}

// MaxMessageSize returns the cap on an incoming message that the Conn reads
// with (Options.MaxMessageSize, or its default), or 0 if it has none. It
// implements jsonrpc.Limiter: a remote side configured alike refuses a
// message longer than that, so a Peer on the Conn does not send one. A cap
// beyond the range of an int is returned as the largest int.
func (c *Conn) MaxMessageSize() int {
	if c.max == noLimit {
		return 0
	}
	return int(min(c.max, math.MaxInt))
}

// minVectorWrite is the size from which a message to a socket is written
// without being copied into the write buffer: its frame goes out as two
// slices in one vectored write (writev), the header (or, for lines, the
// line break) and the message itself.
const minVectorWrite = 16 << 10

var errNotVector = errors.New("stdio: frame needs the write buffer")

// writeVector writes msg's frame from msg itself, or returns errNotVector
// when the framing needs to rewrite it (a line with line breaks in it).
// Only for a w that writes a net.Buffers in one vectored write (c.vector):
// any other writer gets one Write call per slice, two per frame. Such a w
// is a socket, which Close interrupts (no pump), so when writeVector
// returns nothing reads msg any more. Called with c.wmu held.
func (c *Conn) writeVector(msg []byte) error {
	switch c.framing {
	case Header:
		h := append(c.whdr[:0], "Content-Length: "...)
		h = strconv.AppendInt(h, int64(len(msg)), 10)
		c.wvec = [2][]byte{append(h, "\r\n\r\n"...), msg}
	case Line:
		if bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0 || allSpace(msg) {
			return errNotVector // compacted (or refused) as the buffer's path does
		}
		c.wvec = [2][]byte{msg, lineBreak}
	default:
		return errNotVector
	}
	bufs := net.Buffers(c.wvec[:])
	_, err := bufs.WriteTo(c.w)
	c.wvec = [2][]byte{} // keep no reference to msg
	if err != nil {
		if c.closed.Load() {
			return errClosed
		}
		return fmt.Errorf("stdio: write: %w", err)
	}
	return nil
}

// lineBreak ends a line frame.
var lineBreak = []byte{'\n'}

// writeFrame writes b to the underlying writer, through the pump if any.
func (c *Conn) writeFrame(b []byte) (int, error) {
	if c.wpump != nil {
		return c.wpump.call(b)
	}
	return c.w.Write(b)
}

// Close closes the Conn, unblocking pending calls to Read and Write (see
// NewConn and Stdio for the limits of that) and releasing its resources.
// For a Conn made by Command it also ends and reaps the child process; see
// Command. Every call returns the result of the first.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.rpump.stop()
		c.wpump.stop()
		c.closeErr = c.closeFn()
		close(c.closeDone)
	})
	<-c.closeDone
	return c.closeErr
}

// closedError is returned by Read and Write once the Conn is closed.
type closedError struct{}

func (closedError) Error() string { return "stdio: connection closed" }

// Is reports whether target is net.ErrClosed or os.ErrClosed, so callers
// can test for either.
func (closedError) Is(target error) bool {
	return target == net.ErrClosed || target == os.ErrClosed
}

var errClosed error = closedError{}

// closeBoth closes r and w if they are io.Closers, w first so that the peer
// sees the end of our output, and only once if they are the same value.
func closeBoth(r io.Reader, w io.Writer) error {
	var err error
	wc, wok := w.(io.Closer)
	if wok {
		err = wc.Close()
	}
	if rc, ok := r.(io.Closer); ok && !(wok && same(rc, wc)) {
		if rerr := rc.Close(); err == nil {
			err = rerr
		}
	}
	return err
}

// same reports whether a and b are the same value, without panicking on
// values of a non-comparable type.
func same(a, b io.Closer) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}
