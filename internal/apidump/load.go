// Package apidump lists the exported API of the module's packages, one line
// an item, in the format of the Go project's api/*.txt files, so that a test
// can hold the surface to the files checked in under api/.
package apidump

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// GOOS and GOARCH are the build whose API is listed. The ws package has a
// js/wasm variant (dial_js.go) that this listing does not cover.
const (
	GOOS   = "linux"
	GOARCH = "amd64"
)

// A Package is one package whose API is kept in a file.
type Package struct {
	Path string // import path
	Dir  string // directory, relative to the module root, slash-separated
	File string // the API file, relative to the module root
}

// Packages returns the module's packages whose API is checked: every
// non-main package below root except those under internal/, examples/ and
// testdata/, and those of another module (a directory with its own go.mod).
// The file of the root package is api/<name>.txt; of the others, api/ and
// their directory with "/" as "_".
func Packages(root string) ([]Package, error) {
	modPath, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	ctxt := buildContext()
	var pkgs []Package
	err = filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, dir)
		rel = filepath.ToSlash(rel)
		if rel != "." {
			if skipDir(d.Name()) || exists(filepath.Join(dir, "go.mod")) {
				return filepath.SkipDir
			}
		}
		bp, err := ctxt.ImportDir(dir, 0)
		if err != nil || bp.Name == "main" {
			return nil // no Go files, or a command
		}
		p := Package{Path: modPath, Dir: rel, File: "api/" + bp.Name + ".txt"}
		if rel != "." {
			p.Path = path.Join(modPath, rel)
			p.File = "api/" + strings.ReplaceAll(rel, "/", "_") + ".txt"
		}
		pkgs = append(pkgs, p)
		return nil
	})
	return pkgs, err
}

func skipDir(name string) bool {
	switch name {
	case "internal", "examples", "testdata", "vendor", "node_modules":
		return true
	}
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

func modulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(p), `"`), nil
		}
	}
	return "", fmt.Errorf("failed to find the module path in %s/go.mod", root)
}

// buildContext selects files as the GOOS/GOARCH build does, without cgo, so
// that the listing is the same on every machine and needs no C compiler.
func buildContext() build.Context {
	c := build.Default
	c.GOOS, c.GOARCH, c.CgoEnabled = GOOS, GOARCH, false
	return c
}

// importer type-checks packages from source (the standard library's and
// the module cache's too), offline, without function bodies.
type importer struct {
	ctxt build.Context
	fset *token.FileSet
	pkgs map[string]*types.Package // by directory
}

func newImporter() *importer {
	return &importer{ctxt: buildContext(), fset: token.NewFileSet(), pkgs: map[string]*types.Package{}}
}

func (im *importer) Import(path string) (*types.Package, error) {
	return im.ImportFrom(path, ".", 0)
}

func (im *importer) ImportFrom(path, srcDir string, _ types.ImportMode) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	bp, err := im.ctxt.Import(path, srcDir, 0)
	if err != nil {
		return nil, err
	}
	return im.check(bp)
}

// load type-checks the package in dir, whose import path is path.
func (im *importer) load(dir, path string) (*types.Package, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	bp, err := im.ctxt.ImportDir(abs, 0)
	if err != nil {
		return nil, err
	}
	bp.ImportPath = path
	return im.check(bp)
}

func (im *importer) check(bp *build.Package) (*types.Package, error) {
	if p, ok := im.pkgs[bp.Dir]; ok {
		if p == nil {
			return nil, fmt.Errorf("import cycle through %s", bp.ImportPath)
		}
		return p, nil
	}
	im.pkgs[bp.Dir] = nil
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(im.fset, filepath.Join(bp.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: im, IgnoreFuncBodies: true, FakeImportC: true}
	p, err := conf.Check(bp.ImportPath, im.fset, files, nil)
	if err != nil {
		return nil, fmt.Errorf("failed to type-check %s: %w", bp.ImportPath, err)
	}
	im.pkgs[bp.Dir] = p
	return p, nil
}
