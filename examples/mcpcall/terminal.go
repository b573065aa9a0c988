package main

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What a server sends (its name, a tool's description, a result's text, a
// log line) is printed to a terminal, which acts on control characters: an
// escape sequence can retitle the window, clear the screen, or move the
// cursor to overwrite what was printed; bidirectional overrides reorder
// what is read. printClean prints with each of them, and each byte that is
// not UTF-8, escaped as Go would quote it, keeping line breaks and tabs.

// printClean writes the formatted text to out with control characters
// escaped.
func printClean(out io.Writer, format string, args ...any) {
	io.WriteString(out, clean(fmt.Sprintf(format, args...)))
}

// clean returns s with every control character but \n and \t, every
// bidirectional control and every byte that is not UTF-8 written as an
// escape (\x1b, \u202e).
func clean(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
