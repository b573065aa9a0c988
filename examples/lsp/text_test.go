package main

import (
	"reflect"
	"testing"
)

func pos(line, char uint32) Position { return Position{Line: line, Character: char} }

func rng(l1, c1, l2, c2 uint32) *Range { return &Range{Start: pos(l1, c1), End: pos(l2, c2)} }

func TestOffsetAt(t *testing.T) {
	// "é" is 2 bytes in UTF-8 and 1 UTF-16 unit; "🙂" is 4 bytes and 2
	// units (a surrogate pair); "\r\n" is one line break.
	const text = "aé🙂b\r\nxy\rz\n"
	tests := []struct {
		pos  Position
		want int
	}{
		{pos(0, 0), 0},
		{pos(0, 1), 1},   // after "a"
		{pos(0, 2), 3},   // after "é"
		{pos(0, 3), 3},   // inside "🙂": back to its start
		{pos(0, 4), 7},   // after "🙂"
		{pos(0, 5), 8},   // after "b": the end of the line
		{pos(0, 99), 8},  // past the end of the line: its end, before "\r\n"
		{pos(1, 0), 10},  // after "\r\n"
		{pos(1, 2), 12},  // end of "xy"
		{pos(2, 0), 13},  // after a lone "\r"
		{pos(2, 5), 14},  // "z" line, clamped
		{pos(3, 0), 15},  // the empty last line
		{pos(3, 7), 15},  // clamped
		{pos(9, 0), 15},  // past the last line: the end of the text
		{pos(99, 9), 15}, // same
	}
	for _, tt := range tests {
		if got := offsetAt(text, tt.pos); got != tt.want {
			t.Errorf("offsetAt(%q, %v) = %d, want %d", text, tt.pos, got, tt.want)
		}
	}
	if got := offsetAt("", pos(0, 0)); got != 0 {
		t.Errorf("offsetAt(\"\", 0:0) = %d, want 0", got)
	}
}

func TestApplyChanges(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		changes []TextDocumentContentChangeEvent
		want    string
	}{
		{"insert ascii", "hello world", []TextDocumentContentChangeEvent{{Range: rng(0, 5, 0, 5), Text: ","}}, "hello, world"},
		{"replace after é", "café au lait", []TextDocumentContentChangeEvent{{Range: rng(0, 5, 0, 7), Text: "with"}}, "café with lait"},
		{"insert after emoji", "🙂x", []TextDocumentContentChangeEvent{{Range: rng(0, 2, 0, 2), Text: "!"}}, "🙂!x"},
		{"delete emoji", "a🙂b", []TextDocumentContentChangeEvent{{Range: rng(0, 1, 0, 3), Text: ""}}, "ab"},
		{"never splits a surrogate pair", "a🙂b", []TextDocumentContentChangeEvent{{Range: rng(0, 2, 0, 2), Text: "|"}}, "a|🙂b"},
		{"across lines", "one\ntwo\nthree", []TextDocumentContentChangeEvent{{Range: rng(0, 1, 2, 2), Text: "-"}}, "o-ree"},
		{"crlf", "ab\r\ncd", []TextDocumentContentChangeEvent{{Range: rng(1, 1, 1, 1), Text: "X"}}, "ab\r\ncXd"},
		{"append at the end", "ab\n", []TextDocumentContentChangeEvent{{Range: rng(1, 0, 1, 0), Text: "c"}}, "ab\nc"},
		{"past the end is the end", "ab", []TextDocumentContentChangeEvent{{Range: rng(5, 0, 6, 0), Text: "!"}}, "ab!"},
		{"inverted range", "abcd", []TextDocumentContentChangeEvent{{Range: rng(0, 3, 0, 1), Text: "-"}}, "a-d"},
		{"full replace", "old", []TextDocumentContentChangeEvent{{Text: "new\ntext"}}, "new\ntext"},
		{
			"each change applies to the result of the one before", "é🙂",
			[]TextDocumentContentChangeEvent{
				{Range: rng(0, 3, 0, 3), Text: "\nsecond"}, // after the emoji
				{Range: rng(1, 6, 1, 6), Text: " line"},    // needs the line made just above
				{Range: rng(0, 0, 0, 1), Text: "e"},
			},
			"e🙂\nsecond line",
		},
		{
			"full replace then edit", "x",
			[]TextDocumentContentChangeEvent{{Text: "ab"}, {Range: rng(0, 1, 0, 1), Text: "|"}},
			"a|b",
		},
	}
	for _, tt := range tests {
		if got := applyChanges(tt.text, tt.changes); got != tt.want {
			t.Errorf("%s: applyChanges(%q) = %q, want %q", tt.name, tt.text, got, tt.want)
		}
	}
}

func TestWords(t *testing.T) {
	// "e\u0301" is e with a combining acute accent: one word, 2 units.
	const text = "héllo, wörld_2\r\n🙂emoji e\u0301t\u00e9 🙂🙂x\rlast"
	type w struct {
		text  string
		start Position
		end   Position
	}
	want := []w{
		{"héllo", pos(0, 0), pos(0, 5)},
		{"wörld_2", pos(0, 7), pos(0, 14)},
		{"emoji", pos(1, 2), pos(1, 7)},
		{"e\u0301t\u00e9", pos(1, 8), pos(1, 12)},
		{"x", pos(1, 17), pos(1, 18)},
		{"last", pos(2, 0), pos(2, 4)},
	}
	var got []w
	for wd := range words(text) {
		got = append(got, w{wd.Text, wd.Range.Start, wd.Range.End})
		if text[wd.Start:wd.End] != wd.Text {
			t.Errorf("word %q: byte span %d..%d holds %q", wd.Text, wd.Start, wd.End, text[wd.Start:wd.End])
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("words:\n got %v\nwant %v", got, want)
	}
	if n := countWords(text); n != len(want) {
		t.Errorf("countWords = %d, want %d", n, len(want))
	}
	for _, s := range []string{"", " ", "🙂 , .\n\r\n"} {
		if n := countWords(s); n != 0 {
			t.Errorf("countWords(%q) = %d, want 0", s, n)
		}
	}
}

func TestDiagnose(t *testing.T) {
	const text = "é TODO 🙂FIXME\n" + // after non-ASCII: UTF-16 characters
		"TODOs xTODO TODO_ todo\r\n" + // not whole words, or not the case
		"🙂🙂 XXX\n" +
		"FIXME"
	want := []struct {
		code  string
		sev   int
		start Position
		end   Position
	}{
		{"TODO", severityInformation, pos(0, 2), pos(0, 6)},
		{"FIXME", severityWarning, pos(0, 9), pos(0, 14)},
		{"XXX", severityWarning, pos(2, 5), pos(2, 8)},
		{"FIXME", severityWarning, pos(3, 0), pos(3, 5)},
	}
	got := diagnose(text)
	if len(got) != len(want) {
		t.Fatalf("diagnose = %+v, want %d diagnostics", got, len(want))
	}
	for i, d := range got {
		w := want[i]
		if d.Code != w.code || d.Severity != w.sev || d.Range.Start != w.start || d.Range.End != w.end || d.Message == "" {
			t.Errorf("diagnostic %d = %+v, want %s (severity %d) at %v-%v", i, d, w.code, w.sev, w.start, w.end)
		}
	}
	if d := diagnose("nothing here"); d == nil || len(d) != 0 {
		t.Errorf("diagnose without markers = %#v, want an empty, non-nil slice", d)
	}
}

func TestHover(t *testing.T) {
	const text = "🙂 héllo wörld\nbye"
	tests := []struct {
		pos   Position
		value string
		rng   *Range
	}{
		{pos(0, 3), "`héllo`\n\nThe document has 3 words.", rng(0, 3, 0, 8)},   // at its start
		{pos(0, 5), "`héllo`\n\nThe document has 3 words.", rng(0, 3, 0, 8)},   // inside
		{pos(0, 8), "`héllo`\n\nThe document has 3 words.", rng(0, 3, 0, 8)},   // just after it
		{pos(0, 14), "`wörld`\n\nThe document has 3 words.", rng(0, 9, 0, 14)}, // end of line
		{pos(1, 1), "`bye`\n\nThe document has 3 words.", rng(1, 0, 1, 3)},
		{pos(0, 0), "The document has 3 words.", nil}, // on the emoji
		{pos(0, 1), "The document has 3 words.", nil}, // inside the emoji
	}
	for _, tt := range tests {
		h := hoverAt(text, tt.pos)
		if h.Contents.Kind != "markdown" || h.Contents.Value != tt.value || !reflect.DeepEqual(h.Range, tt.rng) {
			t.Errorf("hoverAt(%v) = %q %v, want %q %v", tt.pos, h.Contents.Value, h.Range, tt.value, tt.rng)
		}
	}
	if h := hoverAt("one", pos(0, 0)); h.Contents.Value != "`one`\n\nThe document has 1 word." {
		t.Errorf("hoverAt one word = %q", h.Contents.Value)
	}
}
