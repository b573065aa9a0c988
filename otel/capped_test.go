package otel

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCappedCutsAtRuneBoundary: a value over the cap keeps at most the
// cap's bytes, marker included, as valid UTF-8 when the value was.
func TestCappedCutsAtRuneBoundary(t *testing.T) {
	if got := capped("short", maxAttrBytes); got != "short" {
		t.Errorf("capped(short) = %q, want it whole", got)
	}
	for _, s := range []string{strings.Repeat("é", 300), strings.Repeat("a", 1) + strings.Repeat("日本", 200), strings.Repeat("x", 10_000)} {
		got := capped(s, maxAttrBytes)
		if len(got) > maxAttrBytes || !strings.HasSuffix(got, cutMarker) || !utf8.ValidString(got) || !strings.HasPrefix(s, strings.TrimSuffix(got, cutMarker)) {
			t.Errorf("capped(%d bytes) = %d bytes %q; want a valid UTF-8 prefix and %q, at most %d bytes", len(s), len(got), got, cutMarker, maxAttrBytes)
		}
	}
}
