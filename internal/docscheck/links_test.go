package docscheck_test

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// link is a Markdown inline link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// checkLinks returns the relative links of the Markdown file name whose
// text is text (outside fenced code blocks) that lead nowhere: a file
// that does not exist, relative to the file's directory, or a #fragment
// that no heading of the target Markdown file makes (GitHub's anchors).
// Absolute URLs and mailto: links are not checked.
func checkLinks(name, text string) []string {
	var problems []string
	for _, m := range link.FindAllStringSubmatch(prose(text), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, frag, _ := strings.Cut(target, "#")
		dest := name
		if file != "" {
			dest = path.Join(path.Dir(name), file)
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dest)))
		if file != "" && err != nil {
			if _, serr := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); serr != nil {
				problems = append(problems, fmt.Sprintf("%s: link (%s): no such file %s", name, target, dest))
				continue
			}
		}
		if frag == "" {
			continue
		}
		if dest == name {
			data = []byte(text)
		}
		if !strings.HasSuffix(dest, ".md") || !anchors(string(data))[frag] {
			problems = append(problems, fmt.Sprintf("%s: link (%s): %s has no heading #%s", name, target, dest, frag))
		}
	}
	return problems
}

// anchors returns the anchors that GitHub makes for the headings of a
// Markdown text: lowercased, spaces made '-', punctuation but '-' and '_'
// dropped, repeats numbered -1, -2.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// prose returns a Markdown text without its fenced code blocks.
func prose(text string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
