package tsgen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite testdata/board.d.ts")

// need skips the test, or fails it when REQUIRE_BROWSER=1 (as .ci/run
// sets), because tsc or node is missing.
func need(t *testing.T, missing string) {
	t.Helper()
	if os.Getenv("REQUIRE_BROWSER") == "1" {
		t.Fatalf("%s, and REQUIRE_BROWSER=1; run npm ci in browser/test", missing)
	}
	t.Skipf("%s; run npm ci in browser/test (REQUIRE_BROWSER=1 makes this a failure)", missing)
}

// tscPath returns the path of tsc, or skips the test.
func tscPath(t *testing.T) string {
	t.Helper()
	tsc, _ := filepath.Abs(filepath.Join("..", "..", TSC))
	if _, err := os.Stat(tsc); err != nil {
		need(t, "no tsc at "+tsc)
	}
	return tsc
}

// TestGenerate pins the declarations made from openrpc's test document
// (testdata/board.d.ts; -update rewrites it), and has tsc --strict check
// testdata/use.ts against them: calls, notifications, on and subscribe
// typed by method and topic, each misuse marked @ts-expect-error refused.
func TestGenerate(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "openrpc", "testdata", "board.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(text, &doc); err != nil {
		t.Fatal(err)
	}
	got, err := Generate(doc, "./jsonrpc.js")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "board.d.ts")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, _ := os.ReadFile(golden); !bytes.Equal(got, want) {
		t.Errorf("declarations differ from %s (-update rewrites it):\n%s", golden, got)
	}

	tsc := tscPath(t)
	dir := t.TempDir()
	copyFile(t, filepath.Join("..", "..", "browser", "jsonrpc.d.ts"), filepath.Join(dir, "jsonrpc.d.ts"))
	copyFile(t, golden, filepath.Join(dir, "board.d.ts"))
	copyFile(t, filepath.Join("testdata", "use.ts"), filepath.Join(dir, "use.ts"))
	if out, err := RunTSC(t.Context(), tsc, dir, "use.ts"); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
	// And the check can fail: without its @ts-expect-error lines, use.ts
	// has as many errors as it has such lines.
	use, _ := os.ReadFile(filepath.Join("testdata", "use.ts"))
	marked := strings.Count(string(use), "// @ts-expect-error")
	os.WriteFile(filepath.Join(dir, "use.ts"), bytes.ReplaceAll(use, []byte("// @ts-expect-error"), []byte("// misuse:")), 0o644)
	out, err := RunTSC(t.Context(), tsc, dir, "use.ts")
	if err == nil {
		t.Fatal("tsc took use.ts without its @ts-expect-error lines")
	}
	if n := strings.Count(string(out), "error TS"); n < marked {
		t.Errorf("tsc found %d errors, want at least %d (one per misuse):\n%s", n, marked, out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
