package apidump_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc/internal/apidump"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite the api/*.txt files from the source")

// root is the module root, from this package's directory.
const root = "../.."

// TestAPI fails when the exported API differs from the files in api/, so
// that every change to the surface is seen in review.
func TestAPI(t *testing.T) {
	files, err := apidump.Dump(root)
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range files {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		path := filepath.Join(root, filepath.FromSlash(name))
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, files[name], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v\nrun: go test ./internal/apidump -run TestAPI -update", err)
			continue
		}
		if d := diff(old, files[name]); d != "" {
			t.Errorf("the exported API differs from %s (- in the file, + in the source):\n%s"+
				"if the change is meant, run: go test ./internal/apidump -run TestAPI -update\n"+
				"and commit %s with it", name, d, name)
		}
	}
	stale, _ := filepath.Glob(filepath.Join(root, "api", "*.txt"))
	for _, path := range stale {
		name := "api/" + filepath.Base(path)
		if _, ok := files[name]; !ok {
			t.Errorf("%s lists no package of the module: remove it", name)
		}
	}
}

// diff returns the lines only in old as "-line" and those only in new as
// "+line", in order. Both sides are sorted sets of lines, so that is the
// whole difference.
func diff(old, new []byte) string {
	if bytes.Equal(old, new) {
		return ""
	}
	a, b := strings.Split(string(old), "\n"), strings.Split(string(new), "\n")
	var out strings.Builder
	for _, l := range a {
		if l != "" && !slices.Contains(b, l) {
			out.WriteString("\t-" + l + "\n")
		}
	}
	for _, l := range b {
		if l != "" && !slices.Contains(a, l) {
			out.WriteString("\t+" + l + "\n")
		}
	}
	return out.String()
}
