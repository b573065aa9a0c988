package otel

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// A member is the place of an object member's value in the object's
// bytes: obj[start:end].
type member struct {
	start, end int
	found      bool
}

// Duplicate names are read as encoding/json reads them, the last one
// taken (and tracking them would allocate).
var allowDuplicates = jsontext.AllowDuplicateNames(true)

// findMember returns where the value of the top-level member name of the
// JSON object obj is (the last one, if it is there more than once), and
// whether obj could be read as an object. It skips the other members'
// values without decoding them, and allocates nothing unless a name holds
// an escape (TestNoopExtractSkipsParamsWithEscapes). obj is params the
// Peer has read as JSON, or the caller's own: its scan checks the
// structure, not every literal.
func findMember(obj []byte, name string) (m member, ok bool) {
	if len(obj) == 0 || obj[0] != '{' {
		return m, false
	}
	i := skipSpace(obj, 1)
	if i < len(obj) && obj[i] == '}' {
		return m, skipSpace(obj, i+1) == len(obj)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return m, false
		}
		kEnd, ok := skipString(obj, i)
		if !ok {
			return m, false
		}
		k := obj[i:kEnd]
		if i = skipSpace(obj, kEnd); i >= len(obj) || obj[i] != ':' {
			return m, false
		}
		i = skipSpace(obj, i+1)
		vEnd, ok := skipValue(obj, i)
		if !ok {
			return m, false
		}
		if nameIs(k, name) {
			m = member{start: i, end: vEnd, found: true}
		}
		if i = skipSpace(obj, vEnd); i >= len(obj) {
			return m, false
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return m, skipSpace(obj, i+1) == len(obj)
		default:
			return m, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i].
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); {
		switch b[j] {
		case '\\':
			j += 2
		case '"':
			return j + 1, true
		default:
			j++
		}
	}
	return 0, false
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0 // brackets are not matched by kind: the JSON was read before
		for j := i; j < len(b); {
			switch b[j] {
			case '"':
				e, ok := skipString(b, j)
				if !ok {
					return 0, false
				}
				j = e
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
			j++
		}
		return 0, false
	default: // a number, true, false or null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		return j, j > i
	}
}

// nameIs reports whether the quoted JSON string k is name.
func nameIs(k []byte, name string) bool {
	if len(k) < 2 {
		return false
	}
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k[1:len(k)-1]) == name
	}
	u, err := jsontext.AppendUnquote(nil, k)
	return err == nil && string(u) == name
}
