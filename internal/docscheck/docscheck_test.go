package docscheck_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// root is the repository root, from this package's directory.
const root = "../.."

// docs are the Markdown files whose backquoted names are checked, with
// whether a bare or Type.Member name (no package qualifier) in them is
// ours: bench/README.md names other libraries' types that way. Every
// docs/*.md file is checked too, as README.md is (docFiles).
var docs = map[string]bool{
	"README.md":         true,
	"cluster/README.md": true,
	"bench/README.md":   false,
	"httprpc/README.md": true,
}

// docFiles returns the docs table with every docs/*.md file added, bare
// names ours.
func docFiles(t *testing.T) map[string]bool {
	files := maps.Clone(docs)
	found, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		files["docs/"+filepath.Base(f)] = true
	}
	return files
}

// packages are the published packages, by the name the docs qualify with,
// whose package doc comments are checked too.
var packages = map[string]string{
	"jsonrpc": ".",
	"ws":      "ws",
	"stdio":   "stdio",
	"cluster": "cluster",
	"httprpc": "httprpc",
	"browser": "browser",
	"topic":   "topic",
	"schema":  "schema",
	"openrpc": "openrpc",
}

// elsewhere are bare names the docs use that are not Go identifiers of
// ours, each with the file that must hold it.
var elsewhere = map[string]string{
	// jsonrpc.js, the browser client
	"RPCError":        "browser/jsonrpc.js",
	"AbortError":      "browser/jsonrpc.js",
	"TimeoutError":    "browser/jsonrpc.js",
	"ConnectionError": "browser/jsonrpc.js",
	"CallOptions":     "browser/jsonrpc.d.ts",
	// the declarations openrpc/jsonrpc-ts writes (docs/typescript.md)
	"TypedClient":   "internal/tsgen/gen.go",
	"Calls":         "internal/tsgen/gen.go",
	"Notifications": "internal/tsgen/gen.go",
}

// TestDocs fails when a doc names, in backquotes, something that does not
// exist, links to a file or heading that does not exist, or quotes a
// program that no longer holds what it quotes. The docs are README.md,
// docs/*.md, cluster/README.md, bench/README.md, httprpc/README.md
// (outside fenced code blocks; their links and snippets: see
// checkMarkdown) and the package doc comments of the published packages
// (the packages table). A backquoted
// span, with a leading * or & and a trailing (…) or {…} taken off, is
// checked when it is
//
//   - a test name: Test…, Fuzz…, Benchmark…, Example… (a /subtest taken
//     off), which some _test.go file of the repository must declare;
//   - qualified by one of our package names, jsonrpc.X, ws.X.Y: X must be
//     an exported name of that package, Y a field or method of X;
//   - in README.md, docs/*.md, cluster/README.md and the package docs, a bare exported
//     name X or T.Y: an exported name, or a field or method (of T), of one
//     of our packages (or a name in the elsewhere table);
//   - a path: a span ending in a known file extension, which must exist
//     relative to the doc's directory or the root, or as a base name
//     anywhere; or a span with a '/' whose first element is a file or
//     directory there, which must exist (a pattern, api/*.txt, must match
//     a file); paths under a directory the root
//     .gitignore lists (bench/results/) are generated and only their first
//     element is checked. github.com/peerwire/jsonrpc/… paths must be
//     directories of the repository; other import paths are skipped.
//
// Everything else is skipped: spans with spaces (commands, HTTP lines) or
// "..." (package patterns),
// flags and numbers (a leading '-'), all-capital words (acronyms,
// environment variables), lowercase words and other packages' names
// (nats.Conn, json.Marshal), wire-protocol method names (board.list,
// roots/list: their first element is no file), JSON and Go snippets.
func TestDocs(t *testing.T) {
	api := loadAPI(t)
	tests := loadTestNames(t)
	for name, bare := range docFiles(t) {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range checkMarkdown(name, string(data), bare, api, tests) {
			t.Error(problem)
		}
	}
	for _, dir := range packages {
		for file, doc := range packageDocs(t, dir) {
			for _, span := range codeSpans(doc) {
				if why := check(span, dir, true, api, tests); why != "" {
					t.Errorf("%s (package doc): `%s`: %s", file, span, why)
				}
			}
		}
	}
}

var (
	testName   = regexp.MustCompile(`^(Test|Fuzz|Benchmark|Example)[A-Z0-9_]\w*(/\S*)?$`)
	ident      = regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$`)
	extensions = []string{".go", ".md", ".mjs", ".js", ".json", ".sh", ".txt", ".mod", ".sum", ".work", ".html", ".css"}
)

// check returns why span names nothing, or "" when it does or is skipped.
func check(span, dir string, bare bool, api map[string]map[string]bool, tests map[string]bool) string {
	s := strings.TrimLeft(span, "*&")
	if i := strings.IndexAny(s, "({"); i > 0 && (strings.HasSuffix(s, ")") || strings.HasSuffix(s, "}")) {
		s = s[:i]
	}
	switch {
	case s == "" || strings.ContainsAny(s, " \t<>$%\"'") || strings.HasPrefix(s, "-") || strings.Contains(s, "..."):
		return ""
	case testName.MatchString(s):
		name, _, _ := strings.Cut(s, "/")
		if !tests[name] {
			return "no _test.go file declares " + name
		}
		return ""
	case strings.HasPrefix(s, "github.com/peerwire/jsonrpc"):
		rel := strings.TrimPrefix(strings.TrimPrefix(s, "github.com/peerwire/jsonrpc"), "/")
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil || !fi.IsDir() {
			return "no such directory in the repository"
		}
		return ""
	case strings.Contains(s, "/") && strings.Contains(strings.Split(s, "/")[0], ".") && !exists(filepath.Join(root, strings.Split(s, "/")[0])):
		return "" // another module's import path
	case isPath(s, dir):
		return checkPath(s, dir)
	case ident.MatchString(s):
		return checkIdent(s, bare, api)
	}
	return ""
}

func isPath(s, dir string) bool {
	for _, ext := range extensions {
		if strings.HasSuffix(s, ext) && len(s) > len(ext) {
			return true
		}
	}
	first, _, ok := strings.Cut(s, "/")
	if !ok || first == "" {
		return false
	}
	return exists(filepath.Join(root, dir, first)) || exists(filepath.Join(root, first))
}

func checkPath(s, dir string) string {
	p := filepath.FromSlash(strings.TrimSuffix(s, "/"))
	if exists(filepath.Join(root, dir, p)) || exists(filepath.Join(root, p)) || generated(s) || globs(filepath.Join(root, p)) {
		return ""
	}
	if !strings.Contains(s, "/") && foundAnywhere(s) {
		return ""
	}
	return "no such file or directory"
}

// generated reports whether s is under a directory the root .gitignore
// lists with a leading '/' (made by a script, absent from a clone).
func generated(s string) bool {
	data, _ := os.ReadFile(filepath.Join(root, ".gitignore"))
	for _, line := range strings.Split(string(data), "\n") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "/"); ok && strings.HasSuffix(d, "/") && strings.HasPrefix(s+"/", d) {
			return true
		}
	}
	return false
}

func foundAnywhere(base string) bool {
	found := false
	filepath.WalkDir(root, func(name string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipAll
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		found = d.Name() == base
		return nil
	})
	return found
}

func checkIdent(s string, bare bool, api map[string]map[string]bool) string {
	parts := strings.Split(s, ".")
	if len(parts) > 1 && parts[1] != "" && unicode.IsLower(rune(parts[1][0])) {
		return "" // a method name of a protocol (topic.subscribe), not a Go name
	}
	if names, ok := api[parts[0]]; ok && len(parts) > 1 {
		if !names[strings.Join(parts[1:], ".")] {
			return "package " + parts[0] + " has no exported " + strings.Join(parts[1:], ".")
		}
		return ""
	}
	if !bare || !token.IsExported(parts[0]) || len(parts) > 2 || strings.ToUpper(s) == s {
		return "" // another package's name, a lowercase word, an acronym
	}
	if file, ok := elsewhere[s]; ok {
		data, _ := os.ReadFile(filepath.Join(root, file))
		if !strings.Contains(string(data), s) {
			return file + " does not hold it"
		}
		return ""
	}
	for _, names := range api {
		if names[s] {
			return ""
		}
		if len(parts) == 1 {
			for n := range names {
				if strings.HasSuffix(n, "."+s) {
					return "" // a field or method
				}
			}
		}
	}
	return "no exported name, field or method of our packages (jsonrpc, ws, stdio, cluster, httprpc, browser, topic)"
}

// globs reports whether pattern (api/*.txt) matches a file.
func globs(pattern string) bool {
	m, _ := filepath.Glob(pattern)
	return len(m) > 0
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// markdownSpans returns the backquoted spans of a Markdown text outside
// fenced code blocks.
func markdownSpans(text string) []string {
	var prose strings.Builder
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			prose.WriteString(line + "\n")
		}
	}
	return codeSpans(prose.String())
}

var span = regexp.MustCompile("`([^`\n]+)`")

func codeSpans(text string) []string {
	var out []string
	for _, m := range span.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// packageDocs returns the package doc comments of the package in dir (its
// code blocks, indented lines, left out), by file.
func packageDocs(t *testing.T, dir string) map[string]string {
	fset := token.NewFileSet()
	docs := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc == nil {
			continue
		}
		var prose []string
		for _, line := range strings.Split(f.Doc.Text(), "\n") {
			if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, "    ") {
				prose = append(prose, line)
			}
		}
		rel, _ := filepath.Rel(root, name)
		docs[filepath.ToSlash(rel)] = strings.Join(prose, "\n")
	}
	return docs
}

// loadAPI returns, by package name, the exported names of each published
// package: top-level names, and T.F and T.M for the fields and methods of
// its types (interface methods too). Files of every build are read.
func loadAPI(t *testing.T) map[string]map[string]bool {
	api := map[string]map[string]bool{}
	for name, dir := range packages {
		names := map[string]bool{}
		fset := token.NewFileSet()
		files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			addDecls(f, names)
		}
		if len(names) == 0 {
			t.Fatalf("package %s in %s: no exported names", name, dir)
		}
		api[name] = names
	}
	return api
}

func addDecls(f *ast.File, names map[string]bool) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				names[d.Name.Name] = true
				continue
			}
			if recv := recvName(d.Recv.List[0].Type); recv != "" {
				names[recv+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							names[n.Name] = true
						}
					}
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					names[s.Name.Name] = true
					addMembers(s.Name.Name, s.Type, names)
				}
			}
		}
	}
}

func addMembers(typ string, x ast.Expr, names map[string]bool) {
	var fields *ast.FieldList
	switch x := x.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			if n.IsExported() {
				names[typ+"."+n.Name] = true
			}
		}
	}
}

func recvName(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

// loadTestNames returns the names of the test, fuzz, benchmark and example
// functions that the repository's _test.go files declare, in every module.
func loadTestNames(t *testing.T) map[string]bool {
	names := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((Test|Fuzz|Benchmark|Example)\w*)\(`)
	err := filepath.WalkDir(root, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(data, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// checkMarkdown returns the problems of the Markdown file name (relative
// to the root) whose text is text: its backquoted spans (check), its
// relative links (checkLinks) and its quoted snippets (checkSnippets).
func checkMarkdown(name, text string, bare bool, api map[string]map[string]bool, tests map[string]bool) []string {
	var problems []string
	for _, span := range markdownSpans(text) {
		if why := check(span, path.Dir(name), bare, api, tests); why != "" {
			problems = append(problems, fmt.Sprintf("%s: `%s`: %s", name, span, why))
		}
	}
	problems = append(problems, checkLinks(name, text)...)
	return append(problems, checkSnippets(name, text)...)
}
