package jsonrpc

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// Pipe returns two connected in-memory Conns: what one writes, the other
// reads. A write waits until the other side reads it. Closing either end
// ends both. Pipe suits tests and examples; it needs no socket and no
// framing.
func Pipe() (Conn, Conn) {
	a2b, b2a := make(chan []byte), make(chan []byte)
	done := make(chan struct{})
	once := new(sync.Once)
	return &pipeConn{in: b2a, out: a2b, done: done, once: once},
		&pipeConn{in: a2b, out: b2a, done: done, once: once}
}

type pipeConn struct {
	in, out chan []byte
	done    chan struct{} // shared by both ends
	once    *sync.Once
}

func (c *pipeConn) Read() ([]byte, error) {
	select {
	case msg := <-c.in:
		return msg, nil
	case <-c.done:
		return nil, io.EOF // a clean end, whichever side closed
	}
}

func (c *pipeConn) Write(msg []byte) error {
	select {
	case <-c.done:
		return net.ErrClosed
	default:
	}
	select {
	case c.out <- append([]byte(nil), msg...):
		return nil
	case <-c.done:
		return net.ErrClosed
	}
}

// Gone makes a Pipe a Watcher: a Peer that pushes back, and so does not
// read, still sees the other end close.
func (c *pipeConn) Gone() <-chan struct{} { return c.done }

// GoneErr says why Gone was closed: the Pipe was closed, a clean end.
func (c *pipeConn) GoneErr() error {
	select {
	case <-c.done:
		return errPipeClosed
	default:
		return nil
	}
}

var errPipeClosed = fmt.Errorf("pipe closed: %w", io.EOF)

func (c *pipeConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}
