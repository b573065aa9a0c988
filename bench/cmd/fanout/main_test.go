package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestFanoutReports runs the program as run.sh does, with few subscribers
// and broadcasts, and checks that every server reports a line with every
// figure: each subscriber took every broadcast (the program waits for
// that), in one message each without packing (ours-group, ours-hub), in
// fewer with it (ours-group-pack, ours-hub-pack, centrifuge's joined
// lines), and the server allocated while publishing.
func TestFanoutReports(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fanout")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const msgs = 100
	out, err := exec.Command(bin, "-n", "50", "-msgs", strconv.Itoa(msgs), "-rounds", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
	line := regexp.MustCompile(`(?m)^BenchmarkFanout/(history=(?:no|yes)/impl=[a-z-]+)-\d+\t1\t(\d+) ns/op\t([\d.]+) allocs/pub\t(\d+) B/pub\t(\d+) wireB/sub\t([\d.]+) msgs/sub\t(\d+) lost$`)
	seen := map[string]int{}
	for _, m := range line.FindAllSubmatch(out, -1) {
		name := string(m[1])
		seen[name]++
		allocs, _ := strconv.ParseFloat(string(m[3]), 64)
		wire, _ := strconv.Atoi(string(m[5]))
		perSub, _ := strconv.ParseFloat(string(m[6]), 64)
		if allocs <= 0 {
			t.Errorf("%s: %v allocations a broadcast", name, allocs)
		}
		if wire < msgs*100 { // every broadcast carries a 100-byte object
			t.Errorf("%s: %d bytes per subscriber for %d broadcasts of 100 bytes", name, wire, msgs)
		}
		switch name {
		case "history=no/impl=ours", "history=yes/impl=ours":
			if perSub != msgs {
				t.Errorf("%s: %v messages per subscriber, want %d (one a broadcast)", name, perSub, msgs)
			}
		default:
			if perSub >= msgs {
				t.Errorf("%s: %v messages per subscriber for %d broadcasts: nothing packed", name, perSub, msgs)
			}
		}
	}
	for _, impl := range []string{"centrifuge", "ours", "ours-pack"} {
		for _, history := range []string{"no", "yes"} {
			name := "history=" + history + "/impl=" + impl
			if seen[name] != 2 {
				t.Errorf("%s: %d lines, want 2 (one a round)", name, seen[name])
			}
		}
	}
}
