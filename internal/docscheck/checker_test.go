package docscheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsDirIsChecked: every Markdown file under docs/ is among the files
// TestDocs checks, with bare names held to ours, as README.md.
func TestDocsDirIsChecked(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(root, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	files := docFiles(t)
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			n++
			if !files["docs/"+e.Name()] {
				t.Errorf("docs/%s is not checked", e.Name())
			}
		}
	}
	if n == 0 {
		t.Fatal("no docs/*.md file: the check of docs/ checks nothing")
	}
}

// TestCheckerFindsMisspelledTestInDocs: a test name misspelled in a docs/
// file fails the check; spelled right, it passes.
func TestCheckerFindsMisspelledTestInDocs(t *testing.T) {
	api, tests := loadAPI(t), loadTestNames(t)
	bad := checkMarkdown("docs/x.md", "Held by `TestDefaultHubRefusesEveryTopc`.\n", true, api, tests)
	if len(bad) != 1 || !strings.Contains(bad[0], "no _test.go file declares TestDefaultHubRefusesEveryTopc") {
		t.Errorf("misspelled test: %q", bad)
	}
	if good := checkMarkdown("docs/x.md", "Held by `TestDefaultHubRefusesEveryTopic`.\n", true, api, tests); len(good) != 0 {
		t.Errorf("a test that exists: %q", good)
	}
	if bad := checkMarkdown("docs/x.md", "`topic.Hub.Alow`, `Hub.Alow`\n", true, api, tests); len(bad) != 2 {
		t.Errorf("misspelled names: %q", bad)
	}
}

// TestCheckerFindsBrokenLinks: a link to a file that does not exist, or to
// a heading its file does not have, fails; links that lead somewhere, and
// absolute URLs, pass.
func TestCheckerFindsBrokenLinks(t *testing.T) {
	for _, c := range []struct {
		text string
		bad  int
	}{
		{"[a](nosuch.md) [b](../README.md#no-such-heading) [c](#nor-here)\n\n## Here\n", 3},
		{"[a](peer.md) [b](../README.md#install) [c](#here) [d](https://example.com/x#y) [e](../LICENSE)\n\n## Here\n", 0},
		{"```\n[in code](nosuch.md)\n```\n", 0},
	} {
		if got := checkLinks("docs/x.md", c.text); len(got) != c.bad {
			t.Errorf("%q: %d problems, want %d: %q", c.text, len(got), c.bad, got)
		}
	}
	if a := anchors("# Guide 1: a browser realtime app\n## What it is\n## What it is\n## The browser client: jsonrpc.js\n"); !a["guide-1-a-browser-realtime-app"] || !a["what-it-is-1"] || !a["the-browser-client-jsonrpcjs"] {
		t.Errorf("anchors: %v", a)
	}
}

// TestCheckerFindsStaleSnippet: a block marked as a snippet of a file
// must be in it, "// …" standing for any lines; an unmarked Go block in
// README.md fails.
func TestCheckerFindsStaleSnippet(t *testing.T) {
	const mark = "<!-- snippet: example_happy_test.go -->\n"
	for _, c := range []struct {
		name, text string
		bad        int
	}{
		{"docs/x.md", mark + "```go\na, b := jsonrpc.Pipe()\n  server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux})\n```\n", 0},
		{"docs/x.md", mark + "```go\nmux := jsonrpc.NewMux()\n// …\nclient := jsonrpc.NewPeer(b)\n```\n", 0},
		{"docs/x.md", mark + "```go\na, b := jsonrpc.Pipe()\nclient := jsonrpc.NewPeer(b)\n```\n", 1},
		{"docs/x.md", mark + "```go\nserver := jsonrpc.NewServer()\n```\n", 1},
		{"docs/x.md", "<!-- snippet: nosuch.go -->\n```go\nx\n```\n", 1},
		{"README.md", "```go\nx := 1\n```\n", 1},
		{"README.md", "```sh\ngo test ./...\n```\n", 0},
	} {
		if got := checkSnippets(c.name, c.text); len(got) != c.bad {
			t.Errorf("%s %q: %d problems, want %d: %q", c.name, c.text, len(got), c.bad, got)
		}
	}
}
