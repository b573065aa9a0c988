//go:build unix

package stdio

import (
	"os"
	"syscall"
)

// openStdin returns a File for standard input whose Read a Close can
// interrupt, and a function that gives it back. When stdin is a pipe or a
// socket (as when an editor or an agent host starts this process), the File
// is a duplicate of it in non-blocking mode, which the runtime's poller can
// interrupt; release restores blocking mode, which the duplicate shares with
// fd 0, after closing it. A terminal or a regular file is used as it is:
// non-blocking mode on a terminal would outlive a crash and break the shell.
func openStdin() (f *os.File, release func() error) {
	fi, err := os.Stdin.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return os.Stdin, os.Stdin.Close
	}
	fd, err := syscall.Dup(syscall.Stdin)
	if err != nil {
		return os.Stdin, os.Stdin.Close
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return os.Stdin, os.Stdin.Close
	}
	f = os.NewFile(uintptr(fd), "/dev/stdin") // pollable: fd is non-blocking
	return f, func() error {
		err := f.Close() // interrupts a pending Read
		syscall.SetNonblock(syscall.Stdin, false)
		return err
	}
}
