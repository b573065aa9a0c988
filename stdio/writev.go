//go:build unix || windows

package stdio

import (
	"io"
	"net"
)

// vectored reports whether w writes a net.Buffers in one vectored write
// (writev, WSASend) under its own write lock, as the standard library's
// stream sockets do here. net.Buffers writes to any other writer, a pipe,
// a file or a net.Conn wrapped by something else, with one Write call per
// slice.
func vectored(w io.Writer) bool {
	switch w.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}
