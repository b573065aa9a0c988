// Command release tags a release of the repository's published modules and
// checks, before anyone tags, that users outside the repository can
// require them. Run it from the repository (it is a module of its own, so
// that golang.org/x/mod stays out of the library's go.mod):
//
//	GOWORK=off go -C internal/release run . release -dry-run v0.1.0  # what it would do
//	GOWORK=off go -C internal/release run . release v0.1.0           # bump, check, commit, tag
//	GOWORK=off go -C internal/release run . proxy DIR                # a file proxy of the tree
//	GOWORK=off go -C internal/release run . tidy                     # go mod tidy in cluster, otel, examples/realtime
//
// The published modules are the core, cluster, otel and examples/realtime,
// all released at one version, tagged in that order (v0.1.0,
// cluster/v0.1.0, otel/v0.1.0, examples/realtime/v0.1.0) on one commit. RELEASING.md says the whole
// process.
//
// proxy writes a module proxy in the file layout of GOPROXY=file://DIR
// holding the three modules of the work tree at the version the next
// release would tag (-version to choose), zipped by golang.org/x/mod/zip as
// the go command zips a tag; it prints that version. .ci/proxycheck/run.sh
// uses it to build a user's program from it.
//
// tidy runs go mod tidy in cluster, otel and examples/realtime, which on their
// own (GOWORK=off) require versions of our modules that the public proxy
// may not have yet; it serves them from the tree (or, once tagged, from the
// tag) through a file proxy. Before the version is tagged it leaves no
// go.sum line for our modules: the release writes those.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/semver"
)

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
	release release [-dry-run] [-push] [-skip-tests] vX.Y.Z
	release proxy [-version vX.Y.Z] DIR
	release tidy`)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(cmd string, args []string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	switch cmd {
	case "proxy":
		version := fs.String("version", "", "the version to serve the tree as (default: what the next release tags)")
		fs.Parse(args)
		if fs.NArg() != 1 {
			usage()
		}
		v := *version
		if v == "" {
			if v, err = nextVersion(root); err != nil {
				return err
			}
		}
		if err := checkVersion(v); err != nil {
			return err
		}
		if err := buildProxy(root, fs.Arg(0), v, false); err != nil {
			return err
		}
		fmt.Println(v)
		return nil
	case "tidy":
		fs.Parse(args)
		v, err := requiredVersion(root)
		if err != nil {
			return err
		}
		if err := tidy(root, v, true); err != nil {
			return err
		}
		if tagExists(root, mods[0].tag(v)) {
			return nil
		}
		// Before v is tagged, the hashes of our modules at v are those of
		// today's tree, which will change: leave them to the release.
		for _, m := range mods[1:] {
			if err := dropOurSums(filepath.Join(root, filepath.FromSlash(m.dir), "go.sum")); err != nil {
				return err
			}
		}
		return nil
	case "release":
		var o releaseOpts
		fs.BoolVar(&o.dryRun, "dry-run", false, "print what would be done; change nothing")
		fs.BoolVar(&o.push, "push", false, "push the commit and the tags to origin")
		fs.BoolVar(&o.skipTests, "skip-tests", false, "skip go vet, go test and the proxy check (not for a real release)")
		fs.Parse(args)
		if fs.NArg() != 1 {
			usage()
		}
		return release(root, fs.Arg(0), o)
	}
	usage()
	return nil
}

// nextVersion is the version the requirements name when it is not tagged
// yet, else that version's next patch.
func nextVersion(root string) (string, error) {
	v, err := requiredVersion(root)
	if err != nil || !tagExists(root, mods[0].tag(v)) {
		return v, err
	}
	var major, minor, patch int
	if _, err := fmt.Sscanf(semver.Canonical(v), "v%d.%d.%d", &major, &minor, &patch); err != nil {
		return "", fmt.Errorf("cannot bump %s: %v", v, err)
	}
	return fmt.Sprintf("v%d.%d.%d", major, minor, patch+1), nil
}
