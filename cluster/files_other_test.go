//go:build !unix

package cluster_test

// openFileLimit returns -1: the limit is unknown here.
func openFileLimit() int64 { return -1 }
