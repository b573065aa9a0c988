package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

type releaseOpts struct {
	dryRun, push, skipTests bool
}

// checks are run, in the bumped tree, before the release is committed:
// the README's test command (the API check and the docs check among its
// tests) and the proof that users outside the repository can require
// every module.
var checks = [][]string{
	{"gofmt", "-l", "."},
	{"go", "vet", "./...", "./cluster/...", "./otel/...", "./examples/realtime/..."},
	{"go", "test", "-race", "./...", "./cluster/...", "./otel/...", "./examples/realtime/..."},
	{"bash", ".ci/proxycheck/run.sh"},
}

// release bumps the requirements of our modules on one another to v, runs
// go mod tidy against a file proxy of the tree (so that go.sum names the
// zips the tags will hold), runs the checks, commits, and tags every
// module in order on that commit. With dryRun it does the bump and the
// tidy in a copy of the tree, prints what would change, and runs nothing
// else.
func release(root, v string, o releaseOpts) error {
	say := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	if o.dryRun {
		say("DRY RUN: nothing in %s is changed, nothing is tagged or pushed", root)
	}
	if err := checkVersion(v); err != nil {
		return err
	}

	say("\n# checks before anything changes")
	var problems []string
	if out, err := git(root, "status", "--porcelain"); err != nil {
		return err
	} else if out != "" {
		problems = append(problems, "the work tree has changes: commit or stash them")
	}
	if out, err := git(root, "rev-parse", "--abbrev-ref", "HEAD"); err == nil && strings.TrimSpace(out) != "main" {
		problems = append(problems, fmt.Sprintf("HEAD is %s, not main", strings.TrimSpace(out)))
	}
	for _, m := range mods {
		if tagExists(root, m.tag(v)) {
			problems = append(problems, "tag "+m.tag(v)+" exists")
		}
	}
	if err := changelogHas(root, v); err != nil {
		problems = append(problems, err.Error())
	}
	for _, p := range problems {
		say("  FAIL %s", p)
	}
	if len(problems) == 0 {
		say("  ok: clean work tree on main, no tag for %s yet, CHANGELOG.md has a section for it", v)
	}
	if len(problems) > 0 && !o.dryRun {
		return fmt.Errorf("%d check(s) failed", len(problems))
	}

	work := root
	if o.dryRun {
		tmp, err := os.MkdirTemp("", "release-dry-run-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if err := copyTree(root, tmp); err != nil {
			return err
		}
		work = tmp
	}

	say("\n# bump the requirements on our modules (and the go.work's replacements) to %s", v)
	changed, err := bumpTree(work, v)
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		say("  already at %s", v)
	}
	for _, f := range changed {
		say("  %s", f)
	}

	say("\n# go mod tidy in cluster, otel, then examples/realtime, against a file proxy of the tree at %s", v)
	if err := tidy(work, v, false); err != nil {
		return err
	}
	files := []string{"go.work", "cluster/go.mod", "cluster/go.sum", "otel/go.mod", "otel/go.sum", "examples/realtime/go.mod", "examples/realtime/go.sum"}
	if o.dryRun {
		for _, f := range files {
			out, _ := exec.Command("git", "diff", "--no-index", "--no-color", "--",
				filepath.Join(root, f), filepath.Join(work, f)).Output()
			if len(out) > 0 {
				fmt.Print(indent(strings.ReplaceAll(strings.ReplaceAll(string(out), root, ""), work, "")))
			}
		}
	} else {
		say("  done (git diff shows it)")
	}

	say("\n# checks in the bumped tree")
	for _, c := range checks {
		if o.dryRun || o.skipTests {
			say("  would run: %s", strings.Join(c, " "))
			continue
		}
		say("  run: %s", strings.Join(c, " "))
		if err := runIn(root, c...); err != nil {
			return err
		}
	}

	msg := fmt.Sprintf("release %s: our modules require %s of one another, go.sum names its zips", v, v)
	say("\n# commit and tag, in order, on that commit")
	say("  git commit -m %q   (if the bump changed anything)", msg)
	var tags []string
	for _, m := range mods {
		tags = append(tags, m.tag(v))
		say("  git tag -a %s -m %q", m.tag(v), m.path+" "+v)
	}
	push := append([]string{"push", "--atomic", "origin", "main"}, tags...)
	if o.dryRun {
		say("\n# then\n  git %s", strings.Join(push, " "))
		return nil
	}
	if len(changed) > 0 || treeDirty(root) {
		if _, err := git(root, append([]string{"add", "--"}, files...)...); err != nil {
			return err
		}
		if _, err := git(root, "commit", "-q", "-m", msg); err != nil {
			return err
		}
	}
	for _, m := range mods {
		if _, err := git(root, "tag", "-a", m.tag(v), "-m", m.path+" "+v); err != nil {
			return err
		}
	}
	if !o.push {
		say("\n# tagged; to publish:\n  git %s", strings.Join(push, " "))
		return nil
	}
	return runIn(root, append([]string{"git"}, push...)...)
}

// changelogHas reports whether CHANGELOG.md has a section "## v" (or "## [v]").
func changelogHas(root, v string) error {
	data, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return err
	}
	re := regexp.MustCompile(`(?m)^## \[?` + regexp.QuoteMeta(v) + `\]?([ \t]|$)`)
	if !re.Match(data) {
		return fmt.Errorf("CHANGELOG.md has no section \"## %s\"", v)
	}
	return nil
}

func treeDirty(root string) bool {
	out, err := git(root, "status", "--porcelain")
	return err == nil && out != ""
}

func runIn(dir string, args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	// The checks run in the workspace, whatever GOWORK this program was
	// started with (GOWORK=off, to run it outside the workspace).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOWORK=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	err := cmd.Run()
	fmt.Print(indent(out.String()))
	if err == nil && args[0] == "gofmt" && out.Len() > 0 {
		err = fmt.Errorf("not gofmt'ed")
	}
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return nil
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ") + "\n"
}
