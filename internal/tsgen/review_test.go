package tsgen

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/openrpc"
)

// Record is a Go type whose name is also a TypeScript helper's (and Params
// is also jsonrpc.js's type of that name).
type Record struct {
	Name string `json:"name"`
}

// Params is a method's params, named as Go programs often name them.
type Params struct {
	ID int `json:"id"`
}

// declarations returns what Generate makes of m's document, as jsonrpc-ts
// would read it.
func declarations(t *testing.T, m *jsonrpc.Mux, info openrpc.Info) []byte {
	t.Helper()
	doc, err := openrpc.New(m, info)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal(doc)
	var d map[string]any
	if err := json.Unmarshal(text, &d); err != nil {
		t.Fatal(err)
	}
	ts, err := Generate(d, "./jsonrpc.js")
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestReviewGoTypeNamedRecordOrParams: a definition is declared under its
// Go name as is, so a server with a type named Record (or Params, Promise,
// Client, Calls, ...) makes a file that redeclares what the file itself
// imports or uses: tsc refuses the declarations (Params clashes with the
// import, Record<string, never> and Promise<...> refer to the user's
// non-generic types).
func TestReviewGoTypeNamedRecordOrParams(t *testing.T) {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "rec.get", func(context.Context, Params) (Record, error) { return Record{}, nil })
	jsonrpc.Register(m, "ping", func(context.Context, struct{}) (int, error) { return 0, nil })
	ts := declarations(t, m, openrpc.Info{Title: "t", Version: "1"})
	dir := t.TempDir()
	copyFile(t, filepath.Join("..", "..", "browser", "jsonrpc.d.ts"), filepath.Join(dir, "jsonrpc.d.ts"))
	os.WriteFile(filepath.Join(dir, "api.d.ts"), ts, 0o644)
	use := "import type { TypedClient } from './api.js';\ndeclare const c: TypedClient;\nexport const r: Promise<{ name: string }> = c.call('rec.get', { id: 1 });\n"
	os.WriteFile(filepath.Join(dir, "use.ts"), []byte(use), 0o644)
	if out, err := RunTSC(t.Context(), tscPath(t), dir, "use.ts"); err != nil {
		t.Errorf("tsc refuses the declarations of a Mux with Go types Params and Record: %v\n%s", err, out)
	}
}

// TestReviewTitleInjectsDeclarations: the document's info.title (and
// version) go into a // comment as they are, so a newline in them ends the
// comment and the rest is TypeScript. A document read from a server's
// rpc.discover is the server's to write; with this title tsc takes
// `import { injected } from './api.js'`.
func TestReviewTitleInjectsDeclarations(t *testing.T) {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "ping", func(context.Context, struct{}) (int, error) { return 0, nil })
	ts := declarations(t, m, openrpc.Info{Title: "t\nexport declare const injected: number; //", Version: "1"})
	if bytes.Contains(ts, []byte("\nexport declare const injected: number;")) {
		line, _, _ := strings.Cut(string(ts[bytes.IndexByte(ts, '\n')+1:]), "\n")
		t.Errorf("the title put a declaration in the file: line 2 is %q", line)
	}
}

// TestReviewMalformedDocumentIsAnError: jsonrpc-ts reads a document that
// may come from anyone's rpc.discover; a method whose name is not a string
// (or whose result is not an object) panics Generate instead of failing
// with an error.
func TestReviewMalformedDocumentIsAnError(t *testing.T) {
	for _, text := range []string{
		`{"openrpc":"1.3.2","info":{"title":"t","version":"1"},"methods":[{"name":1,"result":{"name":"r","schema":{}}}]}`,
		`{"openrpc":"1.3.2","info":{"title":"t","version":"1"},"methods":[{"name":"m","result":1}]}`,
		`{"openrpc":"1.3.2","info":{"title":"t","version":"1"},"methods":[7]}`,
	} {
		var doc map[string]any
		if err := json.Unmarshal([]byte(text), &doc); err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("Generate(%s) panicked: %v", text, p)
				}
			}()
			if _, err := Generate(doc, "./jsonrpc.js"); err == nil {
				t.Errorf("Generate(%s) took it", text)
			}
		}()
	}
}

// TestReviewScalarParamsTupleNotOptional: a method whose params are a
// scalar (int) takes exactly one positional param (Typed: "want an array
// of one element, got 0"), but its tuple's element is optional
// ([params: [p0?: number]]), so tsc takes call('sq', []), which the server
// refuses.
func TestReviewScalarParamsTupleNotOptional(t *testing.T) {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "sq", func(_ context.Context, n int) (int, error) { return n * n, nil })
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: m})
	client := jsonrpc.NewPeer(b)
	var got int
	serverErr := client.Call(t.Context(), "sq", []int{}, &got)
	client.Close()
	server.Close()
	client.Wait()
	server.Wait()
	if serverErr == nil {
		t.Fatal("the server takes sq []: no disagreement")
	}
	ts := declarations(t, m, openrpc.Info{Title: "t", Version: "1"})
	dir := t.TempDir()
	copyFile(t, filepath.Join("..", "..", "browser", "jsonrpc.d.ts"), filepath.Join(dir, "jsonrpc.d.ts"))
	os.WriteFile(filepath.Join(dir, "api.d.ts"), ts, 0o644)
	use := "import type { TypedClient } from './api.js';\ndeclare const c: TypedClient;\n// @ts-expect-error the server refuses []\nc.call('sq', []);\n"
	os.WriteFile(filepath.Join(dir, "use.ts"), []byte(use), 0o644)
	if out, err := RunTSC(t.Context(), tscPath(t), dir, "use.ts"); err != nil {
		t.Errorf("tsc takes call('sq', []), which the server refuses (%v): %v\n%s", serverErr, err, out)
	}
}
