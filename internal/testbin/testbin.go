// Package testbin is for the tests of the example commands, which run the
// command they test as a real child process.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// Main builds the command in the current directory (with the race detector
// when the tests have it), sets *bin to its path, runs the tests, checks
// that none left a goroutine behind, removes the binary and exits. Call it
// from TestMain.
func Main(m *testing.M, name string, bin *string) {
	dir, err := os.MkdirTemp("", name+"-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, name)
	args := []string{"build", "-o", *bin}
	if Race {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building %s: %v\n", name, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// Env returns the environment for a child built by Main: a race-enabled
// binary otherwise sleeps 1 s before it exits.
func Env(extra ...string) []string {
	env := append(os.Environ(), extra...)
	if Race && os.Getenv("GORACE") == "" {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return env
}
