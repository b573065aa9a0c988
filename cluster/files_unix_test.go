//go:build unix

package cluster_test

import "syscall"

// openFileLimit returns the process's soft limit on open files (which the
// Go runtime raises to the hard limit at start), or -1 if unknown.
func openFileLimit() int64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return -1
	}
	return int64(l.Cur)
}
