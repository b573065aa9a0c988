package jsonrpc

import "bytes"

// A minimal scanner over JSON text already known to be valid: it finds the
// spans of an object's members without decoding the values. Incoming
// messages are read by envelope.go, which validates as it goes; this is
// for objects inside them (a progress or cancel notification's params).

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace. Every whitespace byte is at most ' ', so the common case
// (compact JSON: no whitespace at all) costs one comparison.
func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && isSpace(b[i]) {
		i++
	}
	return i
}

func trimSpace(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && isSpace(b[i]) {
		i++
	}
	for j > i && isSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}

// skipValue returns the index just past the value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the index just past the string that starts at b[i].
// Short strings (member names, methods) are stepped through; past
// shortString bytes it jumps from quote to quote (bytes.IndexByte is
// vectorised): a quote ends the string unless an odd number of
// backslashes precede it.
func skipString(b []byte, i int) int {
	j := i + 1
	for end := min(len(b), j+shortString); j < end; j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	for j < len(b) {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		q := j + k
		n := 0 // backslashes just before the quote
		for q-1-n > i && b[q-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
	return len(b)
}

// arrayLen returns the number of elements of a valid JSON array.
func arrayLen(b []byte) int {
	n := 0
	i := skipSpace(b, 1)
	for i < len(b) && b[i] != ']' {
		n++
		i = skipSpace(b, skipValue(b, i))
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return n
}

// shortString is how far skipString steps byte by byte.
const shortString = 32

// forEachMember calls fn with the unquoted key and the raw value of each
// member of a valid JSON object, in order.
func forEachMember(b []byte, fn func(key, val []byte)) {
	i := skipSpace(b, 1)
	for i < len(b) && b[i] == '"' {
		kend := skipString(b, i)
		key := b[i+1 : kend-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			if s, ok := stringValue(b[i:kend]); ok {
				key = []byte(s) // the key had escapes
			}
		}
		i = skipSpace(b, kend)
		i = skipSpace(b, i+1) // past ':'
		vend := skipValue(b, i)
		fn(key, b[i:vend])
		i = skipSpace(b, vend)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
}
