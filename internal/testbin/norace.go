//go:build !race

package testbin

// Race reports whether this build has the race detector.
const Race = false
