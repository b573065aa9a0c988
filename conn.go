package jsonrpc

import "errors"

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
