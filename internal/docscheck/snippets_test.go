package docscheck_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// snippetMark, on the line before a fenced code block, names the file of
// the repository (relative to the root) that the block quotes.
var snippetMark = regexp.MustCompile(`^<!-- snippet: (\S+) -->$`)

// checkSnippets returns the problems of the fenced code blocks of the
// Markdown file name whose text is text: a block marked with
// <!-- snippet: FILE --> must appear in FILE, line for line and
// contiguously (each line compared with its surrounding spaces trimmed;
// a line "// …" stands for any lines), so that what the docs show is
// what a test compiles and runs; in README.md every Go block must be so
// marked.
func checkSnippets(name, text string) []string {
	var problems []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		start := i
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
		}
		block := lines[start+1 : min(i, len(lines))]
		var mark []string
		if start > 0 {
			mark = snippetMark.FindStringSubmatch(strings.TrimSpace(lines[start-1]))
		}
		if mark == nil {
			if name == "README.md" && fence == "```go" {
				problems = append(problems, fmt.Sprintf("%s:%d: a Go block with no <!-- snippet: FILE --> line before it: quote a program that a test compiles", name, start+1))
			}
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(mark[1])))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: snippet of %s: %v", name, start+1, mark[1], err))
			continue
		}
		if n, ok := quoted(block, strings.Split(string(data), "\n")); !ok {
			problems = append(problems, fmt.Sprintf("%s:%d: snippet of %s: line %d of the block (%q) is not where it should be in the file", name, start+1, mark[1], n+1, strings.TrimSpace(block[n])))
		}
	}
	return problems
}

// quoted reports whether block appears in file, line for line from some
// line on, lines trimmed, "// …" matching any run of lines; else the index
// of the block's line that matched nowhere after the best start.
func quoted(block, file []string) (int, bool) {
	best := 0
	for start := range file {
		n, ok := matchFrom(block, file[start:])
		if ok {
			return 0, true
		}
		best = max(best, n)
	}
	return best, false
}

// matchFrom matches block against the start of file; on failure it
// returns how many of block's lines matched.
func matchFrom(block, file []string) (int, bool) {
	j := 0
	for n, line := range block {
		want := strings.TrimSpace(line)
		if want == "// …" {
			if n == len(block)-1 {
				return n, true
			}
			next := strings.TrimSpace(block[n+1])
			for j < len(file) && strings.TrimSpace(file[j]) != next {
				j++
			}
			continue
		}
		if j >= len(file) || strings.TrimSpace(file[j]) != want {
			return n, false
		}
		j++
	}
	return len(block), true
}
