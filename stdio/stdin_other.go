//go:build !unix

package stdio

import "os"

// openStdin returns standard input; here a pending Read on it cannot be
// interrupted by Close.
func openStdin() (*os.File, func() error) { return os.Stdin, os.Stdin.Close }
