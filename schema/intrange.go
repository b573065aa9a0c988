package schema

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// upTo is a regular expression (no anchors) matching the decimal integers
// 0 to max, without leading zeros: the text of an integer within a Go
// type's bounds, which JSON Schema cannot say of a string otherwise.
func upTo(max uint64) string {
	d := strconv.FormatUint(max, 10)
	alts := []string{"0"}
	if len(d) > 2 {
		alts = append(alts, fmt.Sprintf("[1-9][0-9]{0,%d}", len(d)-2))
	} else if len(d) == 2 {
		alts = append(alts, "[1-9]")
	}
	for i := range len(d) {
		lo, hi := byte('0'), d[i]-1
		if i == 0 {
			lo = '1'
		}
		if lo > hi {
			continue
		}
		alt := d[:i] + digits(lo, hi)
		if rest := len(d) - i - 1; rest > 0 {
			alt += fmt.Sprintf("[0-9]{%d}", rest)
		}
		alts = append(alts, alt)
	}
	if max > 0 {
		alts = append(alts, d)
	}
	return "(" + strings.Join(alts, "|") + ")"
}

func digits(lo, hi byte) string {
	if lo == hi {
		return string(lo)
	}
	return "[" + string(lo) + "-" + string(hi) + "]"
}

// intPattern is a pattern matching the decimal text of every value of the
// integer kind of t and nothing else (TestReviewIntegerMapKeyOutOfRange,
// TestReviewStringOptionTakesAnyString); zeros says whether leading zeros
// are taken (a ",string" field's text is, a map key's is not).
func intPattern(t reflect.Type, zeros bool) string {
	z := ""
	if zeros {
		z = "0*"
	}
	bits := t.Bits()
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("^(%s%s|-%s%s)$", z, upTo(uint64(1)<<(bits-1)-1), z, upTo(uint64(1)<<(bits-1)))
	}
	return fmt.Sprintf("^%s%s$", z, upTo(^uint64(0)>>(64-bits)))
}
