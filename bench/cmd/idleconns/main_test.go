package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestIdleConnsReports runs the program as a user does, with a bounded
// number of connections, for both servers, and checks that it reports
// every figure, with one goroutine per idle connection on the server and
// heap and stacks that grew with the connections. (The sizes themselves
// are what it measures, not something to assert.)
func TestIdleConnsReports(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "idleconns")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	line := regexp.MustCompile(`per connection: heap (-?\d+) B, stacks (-?\d+) B, heap\+stacks (-?\d+) B, RSS (-?\d+) B, goroutines ([\d.]+)`)
	for _, impl := range []string{"ours", "raw"} {
		out, err := exec.Command(bin, "-impl", impl, "-n", "200", "-settle", "100ms").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", impl, err, out)
		}
		m := line.FindSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no per-connection line in\n%s", impl, out)
		}
		heap, _ := strconv.Atoi(string(m[1]))
		stacks, _ := strconv.Atoi(string(m[2]))
		g, _ := strconv.ParseFloat(string(m[5]), 64)
		if heap <= 0 || stacks <= 0 {
			t.Errorf("%s: heap %d B, stacks %d B per connection: the connections were not counted\n%s", impl, heap, stacks, out)
		}
		if g < 0.9 || g > 1.2 {
			t.Errorf("%s: %.2f goroutines per idle connection, want 1\n%s", impl, g, out)
		}
		t.Logf("%s", out)
	}
}
