package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc/internal/tsgen"
	"github.com/peerwire/jsonrpc/schema"
)

// pageTypes returns the board's OpenRPC document as printDocument writes
// it, and the declarations made from it.
func pageTypes(t *testing.T) (doc, decls []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := printDocument(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), generate(t, b.Bytes())
}

func generate(t *testing.T, doc []byte) []byte {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	ts, err := tsgen.Generate(d, "./js/jsonrpc.js")
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// checkPage copies app.js, the declarations and jsonrpc.js's into a
// temporary directory as the page finds them, and runs tsc --strict
// --checkJs on app.js.
func checkPage(t *testing.T, decls []byte) ([]byte, error) {
	t.Helper()
	tsc, _ := filepath.Abs(filepath.Join("..", "..", tsgen.TSC))
	if _, err := os.Stat(tsc); err != nil {
		needTool(t, "no tsc at "+tsc+" (npm ci in browser/test)")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "js"), 0o755); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{
		filepath.Join("static", "app.js"):                    "app.js",
		filepath.Join("..", "..", "browser", "jsonrpc.d.ts"): filepath.Join("js", "jsonrpc.d.ts"),
	} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "api.d.ts"), decls, 0o644); err != nil {
		t.Fatal(err)
	}
	return tsgen.RunTSC(t.Context(), tsc, dir, "app.js")
}

// TestPageTypes holds the page to the server's Go types: static/openrpc.json
// and static/api.d.ts are what the board's Mux and openrpc/jsonrpc-ts make now
// (go generate rewrites them), and app.js passes tsc --strict --checkJs
// against them.
func TestPageTypes(t *testing.T) {
	doc, decls := pageTypes(t)
	for name, want := range map[string][]byte{"openrpc.json": doc, "api.d.ts": decls} {
		if got, err := os.ReadFile(filepath.Join("static", name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("static/%s is not what the Go types make (run go generate in examples/realtime): %v", name, err)
		}
	}
	if out, err := checkPage(t, decls); err != nil {
		t.Fatalf("tsc on app.js: %v\n%s", err, out)
	}
}

// A Go type changed in ways the page does not follow: Note's text renamed
// body, board.like's unlike renamed undo.
type (
	changedNote struct {
		ID      int64     `json:"id"`
		Body    string    `json:"body"`
		Author  string    `json:"author"`
		Likes   int       `json:"likes"`
		Time    time.Time `json:"time"`
		LikedBy []string  `json:"likedBy,omitempty"`
	}
	changedLike struct {
		ID   int64 `json:"id"`
		Undo bool  `json:"undo,omitempty"`
	}
)

// TestPageTypesBreak changes a Go type, makes the declarations from it,
// and sees tsc fail on app.js where the page uses what changed.
func TestPageTypesBreak(t *testing.T) {
	docText, _ := pageTypes(t)
	for _, c := range []struct {
		name, want string
		change     func(doc map[string]any, g *schema.Generator)
	}{
		{"Note.text renamed body", "Property 'text' does not exist", func(doc map[string]any, g *schema.Generator) {
			s, err := g.Body(reflect.TypeFor[changedNote]())
			if err != nil {
				t.Fatal(err)
			}
			doc["components"].(map[string]any)["schemas"].(map[string]any)["Note"] = s
		}},
		{"board.like's unlike renamed undo", "'unlike' does not exist", func(doc map[string]any, g *schema.Generator) {
			mp, err := g.Params(reflect.TypeFor[changedLike]())
			if err != nil {
				t.Fatal(err)
			}
			var params []any
			for _, p := range mp.List {
				params = append(params, map[string]any{"name": p.Name, "schema": p.Schema, "required": p.Required})
			}
			for _, m := range doc["methods"].([]any) {
				if mo := m.(map[string]any); mo["name"] == "board.like" {
					mo["params"] = params
				}
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(docText, &doc); err != nil {
				t.Fatal(err)
			}
			c.change(doc, &schema.Generator{RefPrefix: "#/components/schemas/"})
			changed, _ := json.Marshal(doc)
			out, err := checkPage(t, generate(t, changed))
			if err == nil {
				t.Fatalf("tsc took app.js against the changed types")
			}
			if !strings.Contains(string(out), c.want) {
				t.Errorf("tsc failed, but not with %q:\n%s", c.want, out)
			}
		})
	}
}
