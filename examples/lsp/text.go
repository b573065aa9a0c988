package main

import (
	"fmt"
	"iter"
	"strings"
	"unicode"
)

// Text handling: documents are Go strings (UTF-8), and LSP positions count
// UTF-16 code units within a line. Lines end at "\n", "\r\n" or "\r", as
// LSP defines. Everything here is a pure function of the text.

// utf16Len is the number of UTF-16 code units that encode r.
func utf16Len(r rune) uint32 {
	if r >= 0x10000 {
		return 2 // a surrogate pair
	}
	return 1
}

// offsetAt returns the byte offset in text of pos. As LSP asks, a character
// past the end of its line means the end of the line, and a line past the
// last one means the end of the text. A character that falls between the
// two halves of a surrogate pair (inside an emoji, say) is taken back to
// the start of that character, so an edit never splits one.
func offsetAt(text string, pos Position) int {
	i := 0
	for range pos.Line {
		j := strings.IndexAny(text[i:], "\r\n")
		if j < 0 {
			return len(text)
		}
		i += j
		if strings.HasPrefix(text[i:], "\r\n") {
			i += 2
		} else {
			i++
		}
	}
	var units uint32
	for k, r := range text[i:] {
		if r == '\r' || r == '\n' {
			return i + k
		}
		n := utf16Len(r)
		if units+n > pos.Character {
			return i + k
		}
		units += n
	}
	return len(text)
}

// applyChanges applies LSP content changes to text in order, each to the
// result of the one before: a change without a range replaces the whole
// text, one with a range replaces that range. A range whose end comes
// before its start is taken the other way round, as VS Code's own text
// document implementation does.
func applyChanges(text string, changes []TextDocumentContentChangeEvent) string {
	for _, ch := range changes {
		if ch.Range == nil {
			text = ch.Text
			continue
		}
		start, end := offsetAt(text, ch.Range.Start), offsetAt(text, ch.Range.End)
		if end < start {
			start, end = end, start
		}
		text = text[:start] + ch.Text + text[end:]
	}
	return text
}

// A word is a maximal run of letters, digits, combining marks and
// underscores.
type word struct {
	Text       string
	Start, End int   // byte offsets in the text
	Range      Range // the same span as an LSP range
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// words yields the words of text in order, with their LSP ranges.
func words(text string) iter.Seq[word] {
	return func(yield func(word) bool) {
		var pos Position // of the rune being looked at
		var w word
		in, prevCR := false, false
		for i, r := range text {
			if isWordRune(r) {
				if !in {
					in, w = true, word{Start: i, Range: Range{Start: pos}}
				}
			} else if in {
				in = false
				w.End, w.Text, w.Range.End = i, text[w.Start:i], pos
				if !yield(w) {
					return
				}
			}
			switch {
			case r == '\n' && prevCR: // the second half of "\r\n"
			case r == '\n' || r == '\r':
				pos.Line++
				pos.Character = 0
			default:
				pos.Character += utf16Len(r)
			}
			prevCR = r == '\r'
		}
		if in {
			w.End, w.Text, w.Range.End = len(text), text[w.Start:], pos
			yield(w)
		}
	}
}

// countWords returns the number of words in text.
func countWords(text string) int {
	n := 0
	for range words(text) {
		n++
	}
	return n
}

// wordAt returns the word under pos: the one it is in, or the one it is
// just after (a cursor at the end of a word is on it).
func wordAt(text string, pos Position) (word, bool) {
	off := offsetAt(text, pos)
	for w := range words(text) {
		if w.Start > off {
			break
		}
		if off <= w.End {
			return w, true
		}
	}
	return word{}, false
}

// markers are the words diagnostics are published for.
var markers = map[string]struct {
	severity int
	message  string
}{
	"TODO":  {severityInformation, "TODO: something is left to do"},
	"FIXME": {severityWarning, "FIXME: something needs fixing"},
	"XXX":   {severityWarning, "XXX: something needs a closer look"},
}

// diagnose returns a diagnostic for every marker word in text (whole words
// only, case-sensitive), in order. It never returns nil: an empty list is
// what clears a document's diagnostics.
func diagnose(text string) []Diagnostic {
	diags := []Diagnostic{}
	for w := range words(text) {
		m, ok := markers[w.Text]
		if !ok {
			continue
		}
		diags = append(diags, Diagnostic{
			Range:    w.Range,
			Severity: m.severity,
			Code:     w.Text,
			Source:   serverName,
			Message:  m.message,
		})
	}
	return diags
}

// hoverAt returns the hover for pos: the document's word count, and the
// word under pos, if any, with its range.
func hoverAt(text string, pos Position) Hover {
	n := countWords(text)
	count := fmt.Sprintf("The document has %d words.", n)
	if n == 1 {
		count = "The document has 1 word."
	}
	w, ok := wordAt(text, pos)
	if !ok {
		return Hover{Contents: MarkupContent{Kind: "markdown", Value: count}}
	}
	return Hover{
		Contents: MarkupContent{Kind: "markdown", Value: fmt.Sprintf("`%s`\n\n%s", w.Text, count)},
		Range:    &w.Range,
	}
}
