package bench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the process has used so far.
// cpu-ns/op, the CPU time a benchmark's loop used per op over both ends of
// the connection (they share the process), is the figure that another
// process's load moves least: ns/op counts the time the benchmark waited
// for a core too, and on a busy machine that dominates.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
