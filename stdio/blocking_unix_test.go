//go:build unix

package stdio

import "syscall"

// makeStdinBlocking puts standard input in blocking mode, as editors and
// most programs hand it to a child (a Go parent's pipes are non-blocking).
func makeStdinBlocking() { syscall.SetNonblock(syscall.Stdin, false) }
