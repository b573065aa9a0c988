package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// buildProxy writes a module proxy in the file layout GOPROXY=file://dir
// reads (<module>/@v/list, <v>.info, <v>.mod, <v>.zip) holding version v of
// every published module. A module whose tag for v exists is zipped from
// that tag when fromTags is set (what the public proxy serves); otherwise
// from the tree at root, as the release would tag it: the files git tracks
// or would track (untracked files that are not ignored), with the
// requirements on our modules at v. The zips are made by golang.org/x/mod/zip,
// as the go command makes them, so their hashes are those of the tags.
func buildProxy(root, dir, v string, fromTags bool) error {
	files, err := treeFiles(root)
	if err != nil {
		return err
	}
	t := time.Now().UTC()
	if out, err := git(root, "log", "-1", "--format=%cI"); err == nil {
		if ct, err := time.Parse(time.RFC3339, strings.TrimSpace(out)); err == nil {
			t = ct.UTC()
		}
	}
	for _, m := range mods {
		if err := writeVersion(root, dir, m, v, files, t, fromTags); err != nil {
			return fmt.Errorf("failed to add %s@%s to the proxy: %w", m.path, v, err)
		}
	}
	return nil
}

func writeVersion(root, dir string, m mod, v string, files []string, t time.Time, fromTags bool) error {
	esc, err := module.EscapePath(m.path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	mv := module.Version{Path: m.path, Version: v}
	var zbuf bytes.Buffer
	var gomod []byte
	if fromTags && tagExists(root, m.tag(v)) {
		subdir := m.dir
		if subdir == "." {
			subdir = "" // the repository's root, to git archive
		}
		if err := modzip.CreateFromVCS(&zbuf, mv, root, m.tag(v), subdir); err != nil {
			return err
		}
		out, err := git(root, "show", m.tag(v)+":"+path.Join(m.dir, "go.mod"))
		if err != nil {
			return err
		}
		gomod = []byte(out)
	} else {
		zfiles, data, err := moduleFiles(root, m, v, files)
		if err != nil {
			return err
		}
		if err := modzip.Create(&zbuf, mv, zfiles); err != nil {
			return err
		}
		gomod = data
	}
	info, _ := json.Marshal(struct{ Version, Time string }{v, t.Format(time.RFC3339)})
	for name, data := range map[string][]byte{v + ".zip": zbuf.Bytes(), v + ".mod": gomod, v + ".info": info} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return err
		}
	}
	list, _ := os.ReadFile(filepath.Join(vdir, "list"))
	if !bytes.Contains(append([]byte("\n"), list...), []byte("\n"+v+"\n")) {
		list = append(list, v+"\n"...)
	}
	return os.WriteFile(filepath.Join(vdir, "list"), list, 0o644)
}

// moduleFiles returns the files of m in the tree and its go.mod as the
// release tags it. Files of nested modules are among them: modzip.Create
// leaves them out, as the go command does.
func moduleFiles(root string, m mod, v string, files []string) ([]modzip.File, []byte, error) {
	prefix := ""
	if m.dir != "." {
		prefix = m.dir + "/"
	}
	var out []modzip.File
	var gomod []byte
	for _, name := range files {
		rel, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		full := filepath.Join(root, filepath.FromSlash(name))
		fi, err := os.Lstat(full)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink (the go command omits those)
		}
		if rel == "go.mod" {
			data, err := os.ReadFile(full)
			if err != nil {
				return nil, nil, err
			}
			if gomod, _, err = bumpMod(full, data, v); err != nil {
				return nil, nil, err
			}
			out = append(out, dataFile{rel, gomod})
			continue
		}
		out = append(out, diskFile{rel, full, fi})
	}
	if gomod == nil {
		return nil, nil, fmt.Errorf("no go.mod in %s", m.dir)
	}
	return out, gomod, nil
}

// treeFiles lists the files below root, slash-separated and relative to
// it: those git tracks or would track when root is a git work tree, else
// every file (a copy made from such a list).
func treeFiles(root string) ([]string, error) {
	if top, err := git(root, "rev-parse", "--show-toplevel"); err == nil && sameDir(strings.TrimSpace(top), root) {
		out, err := git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
		if err != nil {
			return nil, err
		}
		return strings.Split(strings.TrimSuffix(out, "\x00"), "\x00"), nil
	}
	var files []string
	err := filepath.WalkDir(root, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, name)
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	return files, err
}

func sameDir(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// copyTree copies the files treeFiles lists below root into dst.
func copyTree(root, dst string) error {
	files, err := treeFiles(root)
	if err != nil {
		return err
	}
	for _, name := range files {
		src := filepath.Join(root, filepath.FromSlash(name))
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(to, data, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

type diskFile struct {
	path, full string
	info       fs.FileInfo
}

func (f diskFile) Path() string                 { return f.path }
func (f diskFile) Lstat() (fs.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.full) }

type dataFile struct {
	path string
	data []byte
}

func (f dataFile) Path() string                 { return f.path }
func (f dataFile) Lstat() (fs.FileInfo, error)  { return dataInfo{f}, nil }
func (f dataFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type dataInfo struct{ f dataFile }

func (i dataInfo) Name() string       { return path.Base(i.f.path) }
func (i dataInfo) Size() int64        { return int64(len(i.f.data)) }
func (i dataInfo) Mode() fs.FileMode  { return 0o644 }
func (i dataInfo) ModTime() time.Time { return time.Time{} }
func (i dataInfo) IsDir() bool        { return false }
func (i dataInfo) Sys() any           { return nil }
