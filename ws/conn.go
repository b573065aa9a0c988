package ws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
)

// Errors that end a connection; the Peer's Wait returns a cause wrapping
// them.
var (
	// ErrKeepalive: the keepalive found the other side gone. Either a ping
	// got no pong within PingTimeout while the Conn was being read, with
	// nothing else arriving, not even a ping (the other side is gone, or
	// the connection is half-open), or a ping could not be written (the
	// other side closed or reset the connection, or reads nothing and
	// sends nothing), which is how a Conn that is not being read finds out
	// (see Options).
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
// jsonrpc.Conn, jsonrpc.Watcher (see Gone) and jsonrpc.Limiter (see
// MaxMessageSize). Make one with NewConn, or let Dial or Server do it.
type Conn struct {
	ws *websocket.Conn

	wmu        sync.Mutex
	writing    int           // writes in progress, under wmu
	writesDone chan struct{} // made by writeStuck; closed when writing drops to 0
	readBroken atomic.Bool   // reading stopped in the middle of a message
	limit      int64         // the read limit, Options.MaxMessageSize
	written    atomic.Uint64 // Writes that returned nil

	// readState is odd while a Read is in progress. Read adds 1 as it
	// starts and as it returns, and 2 whenever data, a ping or a pong
	// arrives, so that a value seen twice means one Read in progress with
	// nothing arriving in between (see keepalive.go).
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
	remote    net.Addr // the other side's address, when Dial or Accept knew it
}

var _ jsonrpc.Conn = (*Conn)(nil)

// NewConn wraps c, sets its read limit and starts its keepalive. The Conn
// owns c from now on.
//
// ws cannot reach the transport under a websocket.Conn made elsewhere, so
// the Close of a Conn made by NewConn may wait coder/websocket's 5 s for an
// unanswered close frame, and does not linger after a message over the
// limit (see Close); Dial, Accept and Server make Conns whose Close is
// bounded by 1 s. Nor does its keepalive hear the other side's pings (see
// Options.PingInterval).
func NewConn(c *websocket.Conn, opts ...Options) *Conn {
	var o *Options
	switch len(opts) {
	case 0:
	case 1:
		o = &opts[0]
	default:
		panic("ws: more than one Options")
	}
	return new(Conn).init(c, nil, o)
}

// init makes conn the Conn over c, with the transport under c if ws could
// reach it, and returns it. Dial and Accept make conn before c, so that c's
// ping and pong callbacks can reach it (see listen).
func (conn *Conn) init(c *websocket.Conn, transport io.ReadWriteCloser, opts *Options) *Conn {
	o := opts.withDefaults()
	c.SetReadLimit(o.MaxMessageSize)
	conn.ws = c
	conn.transport = transport
	conn.limit = o.MaxMessageSize
	conn.closeCode = websocket.StatusNormalClosure
	conn.gone = make(chan struct{})
	conn.startKeepalive(o.PingInterval, o.PingTimeout)
	return conn
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

var _ jsonrpc.Limiter = (*Conn)(nil)

// RemoteAddr returns the address of the other side of the connection: the
// server's for a Conn that Dial or a Client made (as net/http's transport
// reports the connection it got to httptrace; nil with a RoundTripper that
// does not), the client's for one that Accept or Server made; nil for a
// Conn made by NewConn, whose connection ws cannot reach. It implements jsonrpc.RemoteAddresser (network.peer.address in
// the otel module's spans; TestNetworkPeerAttributes).
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// MaxMessageSize returns the Conn's read limit, Options.MaxMessageSize: a
// remote side configured alike refuses a message longer than that (close
// status 1009). It implements jsonrpc.Limiter, so that a Peer refuses to
// write such a message rather than lose the connection over it. It returns
// 0 when the Conn has no cap.
func (c *Conn) MaxMessageSize() int {
	if c.limit >= noLimit {
		return 0 // no cap
	}
	return int(min(c.limit, math.MaxInt))
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
