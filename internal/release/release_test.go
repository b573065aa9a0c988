package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBump: the requirements on our modules move to the new version, the
// others stay, and a file already at the version keeps its bytes.
func TestBump(t *testing.T) {
	gomod := "module github.com/peerwire/jsonrpc/cluster\n\ngo 1.26.0\n\nrequire (\n\tgithub.com/nats-io/nats.go v1.55.0\n\tgithub.com/peerwire/jsonrpc v0.1.0\n)\n"
	out, changed, err := bumpMod("go.mod", []byte(gomod), "v0.2.0")
	if err != nil || !changed {
		t.Fatalf("bumpMod: changed %v, %v", changed, err)
	}
	if !strings.Contains(string(out), "github.com/peerwire/jsonrpc v0.2.0") || !strings.Contains(string(out), "nats.go v1.55.0") {
		t.Errorf("bumped go.mod:\n%s", out)
	}
	if same, changed, _ := bumpMod("go.mod", out, "v0.2.0"); changed || string(same) != string(out) {
		t.Errorf("a go.mod at the version changed")
	}
	if _, _, err := bumpMod("go.mod", []byte(gomod+"replace github.com/peerwire/jsonrpc => ../\n"), "v0.2.0"); err == nil {
		t.Errorf("a replace directive for our module was accepted")
	}

	work := "go 1.26.0\n\nuse (\n\t.\n\t./cluster\n)\n\n// a comment kept\nreplace (\n\tgithub.com/peerwire/jsonrpc v0.1.0 => ./\n\tgithub.com/peerwire/jsonrpc/cluster v0.1.0 => ./cluster\n)\n"
	out, changed, err = bumpWork("go.work", []byte(work), "v0.2.0")
	if err != nil || !changed {
		t.Fatalf("bumpWork: changed %v, %v", changed, err)
	}
	for _, want := range []string{"github.com/peerwire/jsonrpc v0.2.0 => ./", "github.com/peerwire/jsonrpc/cluster v0.2.0 => ./cluster", "// a comment kept"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("bumped go.work lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "v0.1.0") {
		t.Errorf("bumped go.work still names v0.1.0:\n%s", out)
	}
}

// TestProxy: the repository's modules, served from the tree at a version
// other than the one required, hold their own files only, with go.mod
// requiring that version.
func TestProxy(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Skip("not in a git work tree:", err)
	}
	dir := t.TempDir()
	if err := buildProxy(root, dir, "v0.9.9", false); err != nil {
		t.Fatal(err)
	}
	core := filepath.Join(dir, "github.com/peerwire/jsonrpc/@v")
	zr, err := zip.OpenReader(filepath.Join(core, "v0.9.9.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var gotLicense bool
	for _, f := range zr.File {
		name := strings.TrimPrefix(f.Name, "github.com/peerwire/jsonrpc@v0.9.9/")
		if strings.HasPrefix(name, "cluster/") || strings.HasPrefix(name, "bench/") || strings.HasPrefix(name, "examples/realtime/") || strings.HasPrefix(name, "internal/release/") {
			t.Errorf("the core's zip holds %s, a file of another module", name)
		}
		gotLicense = gotLicense || name == "LICENSE"
	}
	if !gotLicense {
		t.Error("the core's zip has no LICENSE")
	}
	mod, err := os.ReadFile(filepath.Join(dir, "github.com/peerwire/jsonrpc/examples/realtime/@v/v0.9.9.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"github.com/peerwire/jsonrpc v0.9.9", "github.com/peerwire/jsonrpc/cluster v0.9.9"} {
		if !strings.Contains(string(mod), want) {
			t.Errorf("examples/realtime's go.mod lacks %q:\n%s", want, mod)
		}
	}
	if list, _ := os.ReadFile(filepath.Join(core, "list")); string(list) != "v0.9.9\n" {
		t.Errorf("list = %q", list)
	}
}
