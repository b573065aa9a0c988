package schema

import (
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// expr is a JSON expression: a number, or an array of expressions (a
// recursive union that Go has no type for, which is what Definer is for).
type expr struct{ _ any }

// DefineSchema says an expr is a number or an array of exprs.
func (expr) DefineSchema(g *Generator) (Schema, error) {
	list, err := g.Schema(reflect.TypeFor[[]expr]())
	if err != nil {
		return nil, err
	}
	return Schema{"anyOf": []any{Schema{"type": "number"}, list}}, nil
}

// TestReviewRecursiveDefinerTerminates: a Definer whose schema refers to
// itself (through a slice: no struct name to stop at) makes the generator
// recurse until the goroutine's stack is exhausted, a fatal error that no
// recover catches: the process dies. Run in a child process so that the
// rest of the suite survives it.
func TestReviewRecursiveDefinerTerminates(t *testing.T) {
	if os.Getenv("REVIEW_DEFINER_CHILD") == "1" {
		_, err := For(reflect.TypeFor[expr]())
		t.Logf("For returned %v", err)
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestReviewRecursiveDefinerTerminates$", "-test.v")
	cmd.Env = append(os.Environ(), "REVIEW_DEFINER_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		first := string(out)
		if i := strings.Index(first, "\n\nruntime stack"); i > 0 {
			first = first[:i]
		}
		if len(first) > 400 {
			first = first[:400]
		}
		t.Errorf("For(expr) killed the process: %v\n%s", err, first)
	}
}
