package jsonrpc

import "bytes"

// The envelope reader: one pass over an incoming message that validates it
// (as validJSON would: the same grammar, the same nesting limit) and finds
// the members of its envelope objects on the way, so that a large params
// or result is walked once before the JSON engine decodes it, not twice
// (a validation pass, then a scan for the members). FuzzDecode holds the
// outcome to encoding/json's Valid.

// readObject checks the object that starts at b[i] (a '{'), nested depth
// deep, and returns the members JSON-RPC defines and the index just past
// it. A member named twice keeps its last value, as encoding/json does.
func readObject(b []byte, i, depth int) (m members, end int, ok bool) {
	if depth >= maxDepth {
		return m, i, false
	}
	j := skipSpace(b, i+1)
	if j < len(b) && b[j] == '}' {
		return m, j + 1, true
	}
	for {
		if j >= len(b) || b[j] != '"' {
			return m, j, false
		}
		kend, ok := validString(b, j)
		if !ok {
			return m, kend, false
		}
		key := b[j+1 : kend-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			s, _ := stringValue(b[j:kend]) // valid: it decodes
			key = []byte(s)
		}
		if j = skipSpace(b, kend); j >= len(b) || b[j] != ':' {
			return m, j, false
		}
		j = skipSpace(b, j+1)
		vend, ok := validValue(b, j, depth+1)
		if !ok {
			return m, vend, false
		}
		m.set(key, b[j:vend])
		if j = skipSpace(b, vend); j >= len(b) {
			return m, j, false
		}
		switch b[j] {
		case '}':
			return m, j + 1, true
		case ',':
			j = skipSpace(b, j+1)
		default:
			return m, j, false
		}
	}
}

// set records val if key names a member JSON-RPC defines.
func (m *members) set(key, val []byte) {
	switch string(key) {
	case "jsonrpc":
		m.jsonrpc = val
	case "method":
		m.method = val
	case "params":
		m.params = val
	case "id":
		m.id = val
	case "result":
		m.result = val
	case "error":
		m.err = val
	}
}

// element is one element of an incoming batch: its text and, if it is an
// object, its members.
type element struct {
	text []byte
	obj  bool
	m    members
}

// readBatch checks the array b (a whole message, '[' first, no space
// around it) and appends its elements to els. ok is false if b is not
// valid JSON.
func readBatch(b []byte, els []element) (_ []element, ok bool) {
	j := skipSpace(b, 1)
	if j < len(b) && b[j] == ']' {
		return els, j+1 == len(b)
	}
	for {
		if j >= len(b) {
			return els, false
		}
		var el element
		var end int
		if b[j] == '{' {
			el.obj = true
			el.m, end, ok = readObject(b, j, 1)
		} else {
			end, ok = validValue(b, j, 1)
		}
		if !ok {
			return els, false
		}
		el.text = b[j:end]
		els = append(els, el)
		if j = skipSpace(b, end); j >= len(b) {
			return els, false
		}
		switch b[j] {
		case ']':
			return els, j+1 == len(b)
		case ',':
			j = skipSpace(b, j+1)
		default:
			return els, false
		}
	}
}
