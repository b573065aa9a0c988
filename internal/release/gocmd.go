package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// offline is an environment for go commands that resolve our modules from
// a file proxy of the tree, as a user outside the repository would from
// the public proxy: no workspace, go.mod and go.sum updated as needed, our
// modules not looked up in the checksum database (the proxy's zips are not
// published yet), and a module cache of its own so that a version served
// from the tree never mixes with one cached earlier. Other modules come
// from the machine's module cache, read as a proxy, then from its GOPROXY.
type offline struct {
	proxy, modcache string
}

func newOffline() (*offline, error) {
	tmp, err := os.MkdirTemp("", "release-proxy-")
	if err != nil {
		return nil, err
	}
	o := &offline{proxy: filepath.Join(tmp, "proxy"), modcache: filepath.Join(tmp, "modcache")}
	return o, os.MkdirAll(o.proxy, 0o755)
}

func (o *offline) env() ([]string, error) {
	upstream, err := goEnv("GOPROXY")
	if err != nil {
		return nil, err
	}
	cache, err := goEnv("GOMODCACHE")
	if err != nil {
		return nil, err
	}
	return append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=-mod=mod",
		"GONOSUMDB="+ours,
		"GOMODCACHE="+o.modcache,
		"GOPROXY=file://"+filepath.ToSlash(o.proxy)+",file://"+filepath.ToSlash(filepath.Join(cache, "cache", "download"))+","+upstream,
	), nil
}

// run runs the go command with args in dir.
func (o *offline) run(dir string, args ...string) error {
	env, err := o.env()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s in %s: %w", strings.Join(args, " "), dir, err)
	}
	return nil
}

// remove deletes the proxy and the module cache (whose files the go
// command makes read-only).
func (o *offline) remove() {
	tmp := filepath.Dir(o.proxy)
	filepath.WalkDir(tmp, func(name string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(name, 0o755)
		}
		return nil
	})
	os.RemoveAll(tmp)
}

func goEnv(name string) (string, error) {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// tidy runs go mod tidy in every published module but the core, in tag
// order, each against a proxy rebuilt from the tree (the go.sum that tidy
// wrote for one module is part of the zip the next one requires). The
// go.sum lines of our modules are dropped first: they name zips of the
// tree that may have changed since.
func tidy(root, v string, fromTags bool) error {
	o, err := newOffline()
	if err != nil {
		return err
	}
	defer o.remove()
	for _, m := range mods[1:] {
		dir := filepath.Join(root, filepath.FromSlash(m.dir))
		if err := dropOurSums(filepath.Join(dir, "go.sum")); err != nil {
			return err
		}
		if err := buildProxy(root, o.proxy, v, fromTags); err != nil {
			return err
		}
		if err := o.run(dir, "mod", "tidy"); err != nil {
			return err
		}
	}
	return nil
}

func dropOurSums(name string) error {
	data, err := os.ReadFile(name)
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		return err
	}
	var keep []string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if path, _, _ := strings.Cut(line, " "); !isOurs(path) {
			keep = append(keep, line)
		}
	}
	return os.WriteFile(name, []byte(strings.Join(keep, "")), 0o644)
}
