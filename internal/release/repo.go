package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// A mod is one published module of the repository.
type mod struct {
	path string // module path
	dir  string // directory relative to the repository root, slash-separated
}

// mods are the published modules in the order they are tagged: each
// requires only those before it.
var mods = []mod{
	{"github.com/peerwire/jsonrpc", "."},
	{"github.com/peerwire/jsonrpc/cluster", "cluster"},
	{"github.com/peerwire/jsonrpc/otel", "otel"},
	{"github.com/peerwire/jsonrpc/examples/realtime", "examples/realtime"},
}

// ours is the GONOSUMDB pattern of our modules: a prefix of every path above.
const ours = "github.com/peerwire/jsonrpc"

// tag is the git tag of version v of m: "v0.1.0", "cluster/v0.1.0".
func (m mod) tag(v string) string {
	if m.dir == "." {
		return v
	}
	return m.dir + "/" + v
}

func isOurs(path string) bool {
	for _, m := range mods {
		if m.path == path {
			return true
		}
	}
	return false
}

// repoRoot returns the top of the git work tree that holds the working
// directory (go -C internal/release run . starts it in internal/release).
func repoRoot() (string, error) {
	out, err := git(".", "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), nil
}

func tagExists(root, tag string) bool {
	_, err := git(root, "rev-parse", "-q", "--verify", "refs/tags/"+tag)
	return err == nil
}

// requiredVersion is the version of the core that cluster/go.mod requires:
// on main, the version the next release tags (or the last one tagged).
func requiredVersion(root string) (string, error) {
	f, err := parseMod(filepath.Join(root, "cluster", "go.mod"))
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == mods[0].path {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("cluster/go.mod does not require %s", mods[0].path)
}

func parseMod(name string) (*modfile.File, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return modfile.Parse(name, data, nil)
}

// bumpMod returns data (a go.mod) with its requirements on our modules at
// version v, and whether anything changed. An unchanged file keeps its
// bytes, so that its module's hash is what the tag's will be.
func bumpMod(name string, data []byte, v string) ([]byte, bool, error) {
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return nil, false, err
	}
	changed := false
	for _, r := range f.Require {
		if isOurs(r.Mod.Path) && r.Mod.Version != v {
			if err := f.AddRequire(r.Mod.Path, v); err != nil {
				return nil, false, err
			}
			changed = true
		}
	}
	for _, r := range f.Replace {
		if isOurs(r.Old.Path) {
			return nil, false, fmt.Errorf("%s: replace %s: a module with a replace directive for ours cannot be required from outside", name, r.Old.Path)
		}
	}
	if !changed {
		return data, false, nil
	}
	out, err := f.Format()
	return out, true, err
}

// bumpWork returns data (the go.work) with its replacements of our modules
// at version v.
func bumpWork(name string, data []byte, v string) ([]byte, bool, error) {
	f, err := modfile.ParseWork(name, data, nil)
	if err != nil {
		return nil, false, err
	}
	var old []modfile.Replace // copies: DropReplace clears what f.Replace points to
	for _, r := range f.Replace {
		if isOurs(r.Old.Path) && r.Old.Version != v {
			old = append(old, *r)
		}
	}
	if len(old) == 0 {
		return data, false, nil
	}
	// Add first, so that the new lines join the existing block and its
	// comments stay.
	for _, r := range old {
		if err := f.AddReplace(r.Old.Path, v, r.New.Path, r.New.Version); err != nil {
			return nil, false, err
		}
	}
	for _, r := range old {
		if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
			return nil, false, err
		}
	}
	f.Cleanup()
	return modfile.Format(f.Syntax), true, nil
}

// bumpTree rewrites, in the tree at root, the requirements of our modules
// on one another and the go.work's replacements to version v, and returns
// the files it changed.
func bumpTree(root, v string) ([]string, error) {
	var changed []string
	for _, m := range mods {
		name := filepath.Join(root, filepath.FromSlash(m.dir), "go.mod")
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out, ok, err := bumpMod(name, data, v)
		if err != nil {
			return nil, err
		}
		if ok {
			if err := os.WriteFile(name, out, 0o644); err != nil {
				return nil, err
			}
			changed = append(changed, filepath.ToSlash(filepath.Join(m.dir, "go.mod")))
		}
	}
	name := filepath.Join(root, "go.work")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	out, ok, err := bumpWork(name, data, v)
	if err != nil {
		return nil, err
	}
	if ok {
		if err := os.WriteFile(name, out, 0o644); err != nil {
			return nil, err
		}
		changed = append(changed, "go.work")
	}
	return changed, nil
}

// checkVersion accepts v0.x.y and v1.x.y: from v2 on the module paths
// would need a /vN suffix.
func checkVersion(v string) error {
	if err := module.Check(mods[0].path, v); err != nil {
		return err
	}
	if !strings.HasPrefix(v, "v0.") && !strings.HasPrefix(v, "v1.") {
		return fmt.Errorf("%s: from v2 on the module paths need a /v2 suffix; this script does not do that", v)
	}
	return nil
}
