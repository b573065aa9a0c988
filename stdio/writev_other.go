//go:build !unix && !windows

package stdio

import "io"

// vectored reports whether w writes a net.Buffers in one vectored write.
// On this system the standard library's sockets write one slice at a time
// too, so no writer does.
func vectored(io.Writer) bool { return false }
