package apidump_test

import (
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

// TestAPI fails when the exported API of the published packages (the
// library's, the cluster module's and the otel module's: apidump.Modules) differs from the
// files in api/, so that every change to the surface is seen in review. Its
// report puts the incompatible changes (removed or changed lines) apart
// from the compatible ones (added lines), as CHANGELOG.md's policy needs.
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
		if d := apidump.Report(apidump.Compare(lines(old), lines(files[name]))); d != "" {
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

func lines(b []byte) []string { return strings.Split(string(b), "\n") }

// TestCompare holds the report's classification: removed and changed items
// are incompatible, added ones compatible, except a method added to an
// interface that other packages can implement.
func TestCompare(t *testing.T) {
	old := []string{
		"pkg p, func F(int) error",
		"pkg p, func Gone()",
		"pkg p, type I interface { M }",
		"pkg p, type I interface, M()",
		"pkg p, type S interface { M, unexported methods }",
		"pkg p, type S interface, M()",
		"pkg p, type T struct",
		"pkg p, type T struct, A int",
	}
	new := []string{
		"pkg p, func F(int, int) error",
		"pkg p, func New()",
		"pkg p, type I interface { M, N }",
		"pkg p, type I interface, M()",
		"pkg p, type I interface, N()",
		"pkg p, type S interface { M, N, unexported methods }",
		"pkg p, type S interface, M()",
		"pkg p, type S interface, N()",
		"pkg p, type T struct",
		"pkg p, type T struct, A int64",
		"pkg p, type T struct, B int",
	}
	got := map[string]bool{}
	for _, c := range apidump.Compare(old, new) {
		got[c.Old+" => "+c.New] = c.Compatible
	}
	want := map[string]bool{
		"pkg p, func F(int) error => pkg p, func F(int, int) error":         false,
		"pkg p, func Gone() => ":                                            false,
		"pkg p, type I interface { M } => pkg p, type I interface { M, N }": false,
		" => pkg p, type I interface, N()":                                  false,
		"pkg p, type S interface { M, unexported methods } => pkg p, type S interface { M, N, unexported methods }": true,
		" => pkg p, type S interface, N()":                             true,
		"pkg p, type T struct, A int => pkg p, type T struct, A int64": false,
		" => pkg p, type T struct, B int":                              true,
		" => pkg p, func New()":                                        true,
	}
	for k, v := range want {
		if c, ok := got[k]; !ok || c != v {
			t.Errorf("%s: compatible %v (found %v), want %v", k, c, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d changes, want %d: %v", len(got), len(want), got)
	}
}
