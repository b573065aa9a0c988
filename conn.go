package jsonrpc

import (
	"errors"
	"net"
)

// A Conn carries whole JSON-RPC messages between two peers. A message is one
// JSON value: a request or response object, or a batch array of them.
//
// A Peer calls Read from one goroutine only and serialises its calls to
// Write, but Close may be called at any time, concurrently with Read and
// Write, and must make both return promptly: Close is how a Peer stops a
// read or a write, so neither takes a context.
type Conn interface {
	// Read returns the next message. The Peer owns the returned slice.
	// Read returns io.EOF when the remote ended the stream cleanly at a
	// message boundary. An error wrapping ErrMessageTooLarge means the
	// message was skipped and the Conn can still be read; any other error
	// ends the connection.
	Read() ([]byte, error)

	// Write sends msg as one whole message. It must not retain msg after it
	// returns.
	Write(msg []byte) error

	// Close ends the connection and releases its resources.
	Close() error
}

// ErrMessageTooLarge is wrapped by a Conn's Read when an incoming message
// exceeds the Conn's size cap. A Conn that returns it has skipped the message
// without buffering it and stays usable; the Peer answers the sender with an
// Invalid Request error and goes on reading.
var ErrMessageTooLarge = errors.New("jsonrpc: message too large")

// A Watcher is a Conn that can learn that its remote side has gone while
// nobody reads it. A Peer pushes back on a remote side that sends
// notifications faster than its handlers take them by not reading (see the
// package doc), and a stream that is not read shows no close, reset or
// missed keepalive: they wait behind the unread data. While its read loop
// waits for room, a Peer also waits on Gone. Once Gone is closed with an
// error that wraps io.EOF (a clean end: the remote said all it had to
// say), the Peer serves what it has read and reads on to the end, as
// after a Read's io.EOF, within Options.DrainTimeout; with any other
// error it ends the connection at once, with a cause wrapping it, without
// reading what the stream still holds. A Peer that is reading ignores
// Gone: its Read sees the end, after the messages sent before it.
//
// ws.Conn implements it with its keepalive, which probes by writing while
// the Conn is not read; stdio's Command with the child process's exit.
type Watcher interface {
	// Gone returns a channel that is closed once the remote side is known
	// to have gone; a nil channel if it never can be.
	Gone() <-chan struct{}
	// GoneErr returns why Gone was closed, or nil while it is not.
	GoneErr() error
}

// A Router is a Conn that carries each message on the stream of the
// inbound message it belongs to, as an HTTP transport must: the reply to a
// POST goes on that POST's response. When its Conn is a Router, a Peer
// calls WriteFor instead of Write.
//
// read names the inbound message msg belongs to: the ordinal, counted from
// 1, of the call to Read that returned it (a Read that failed with
// ErrMessageTooLarge counts, since it is answered). A reply, single or
// batch array, carries its request's ordinal; so do the read loop's own
// replies (a refusal, a parse error, a message too large); a Call, Batch,
// Notify or ReportProgress made with a handler's ctx, or one derived from
// it, carries the ordinal of that handler's request. Anything else, a
// cancel notification included, carries 0.
type Router interface {
	WriteFor(msg []byte, read uint64) error
}

// A Limiter is a Conn that carries messages up to a size, which its remote
// side (configured alike) would refuse past. A Peer does not write a
// message longer than MaxMessageSize bytes: Call, Notify and Batch fail at
// once with an error wrapping ErrMessageTooLarge, a handler's reply that
// long is replaced by an Internal error reply, and the replies to an
// inbound batch (or the read loop's refusals of one) that do not fit in
// one array go in several, each within the limit, so that every call is
// answered (a receiver matching batch replies by id, as the specification
// requires, takes them alike); a call whose id is too long to answer
// within the limit is answered with id null. Zero or less means no limit.
type Limiter interface {
	MaxMessageSize() int
}

// A RemoteAddresser is a Conn that knows the network address of its
// remote side: the other end of a TCP connection, the client of the HTTP
// request that opened it. Peer.RemoteAddr asks it (for telemetry:
// network.peer.address).
//
// ws.Conn and httprpc's server-side Conns implement it, and so does a
// stdio Conn whose reader is a net.Conn.
type RemoteAddresser interface {
	// RemoteAddr returns the remote side's address, or nil if it is not
	// known.
	RemoteAddr() net.Addr
}
