package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// validJSON reports whether b is exactly one JSON value (RFC 8259), with
// optional whitespace around it. It accepts what encoding/json's Valid
// accepts: bytes that are not valid UTF-8 inside strings are allowed, and
// nesting deeper than maxDepth is not. Every incoming message passes here
// once, so strings, the bulk of large payloads, are scanned eight bytes at
// a time. It keeps the open containers on a stack of bytes, not of calls,
// so that a deeply nested message costs a hostile sender's peer no more
// than maxDepth bytes. FuzzValid holds it to encoding/json's Valid.
func validJSON(b []byte) bool {
	end, ok := validValue(b, skipSpace(b, 0), 0)
	return ok && skipSpace(b, end) == len(b)
}

// validValue checks the JSON value that starts at b[i] and returns the
// index just past it. depth is how deeply the value is nested already:
// containers inside it may nest maxDepth-depth deep. The envelope reader
// (envelope.go) checks the members of a message with it, so that a
// message is validated in the same pass that finds its members.
func validValue(b []byte, i, depth int) (int, bool) {
	var inline [32]byte
	open := inline[:0] // the closing byte of each container open
	for {
		// A value starts at i.
		if i >= len(b) {
			return i, false
		}
		ok := true
		switch c := b[i]; c {
		case '{', '[':
			if depth+len(open) >= maxDepth {
				return i, false
			}
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			j := skipSpace(b, i+1)
			if j < len(b) && b[j] == end {
				i = j + 1 // empty: a whole value
				break
			}
			open = append(open, end)
			if c == '{' {
				i, ok = member(b, j)
			} else {
				i = j
			}
			if !ok {
				return i, false
			}
			continue
		case '"':
			i, ok = validString(b, i)
		case 't':
			i, ok = literal(b, i, "true")
		case 'f':
			i, ok = literal(b, i, "false")
		case 'n':
			i, ok = literal(b, i, "null")
		default:
			i, ok = number(b, i)
		}
		if !ok {
			return i, false
		}
		// A value ends at i: close containers, or go on to the next element.
		for {
			if len(open) == 0 {
				return i, true
			}
			if i = skipSpace(b, i); i >= len(b) {
				return i, false
			}
			end := open[len(open)-1]
			if b[i] == end {
				open = open[:len(open)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return i, false
			}
			if i = skipSpace(b, i+1); end == '}' {
				if i, ok = member(b, i); !ok {
					return i, false
				}
			}
			break
		}
	}
}

// maxDepth is the deepest nesting of arrays and objects accepted, as in
// encoding/json.
const maxDepth = 10000

// member checks a member's name and colon at i and returns where its value
// starts.
func member(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := validString(b, i)
	if !ok {
		return i, false
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipSpace(b, i+1), true
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// Word-at-a-time tests over eight bytes (little-endian loads): the lowest
// flagged byte of each is exact (higher ones may be false positives, which
// is why only the first is used).
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special flags bytes that end a run of plain string content: a quote, a
// backslash, or a control character (below 0x20).
func special(w uint64) uint64 {
	q := w ^ (ones * '"')
	s := w ^ (ones * '\\')
	return ((q-ones)&^q | (s-ones)&^s | (w-ones*0x20)&^w) & highs
}

// validString checks the string starting at b[i] (a quote) and returns the
// index just past its closing quote.
func validString(b []byte, i int) (int, bool) {
	i++
	for {
		// Word by word, inline, for the first 32 bytes (names and short
		// values end there); the rest of a longer run goes to plainRun.
		for n := 0; i+8 <= len(b); n++ {
			if n == 4 {
				i = plainRun(b, i)
				break
			}
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default:
			i++ // a plain byte in the tail shorter than a word
		}
	}
}

// plainRun returns the index of the first quote, backslash or control
// character at or after i, or len(b). It looks at a window at a time: the
// window's first quote and first backslash are found by bytes.IndexByte
// (vectorised), and only the bytes before them are tested for control
// characters, eight at a time, so that a long string costs about one
// instruction a byte, not three. The window bounds the work a string full
// of escapes can cost: each escape sends it back here with a fresh window.
func plainRun(b []byte, i int) int {
	for i < len(b) {
		win := b[i:min(len(b), i+plainWindow)]
		n := len(win)
		if q := bytes.IndexByte(win, '"'); q >= 0 {
			n = q
		}
		if k := bytes.IndexByte(win[:n], '\\'); k >= 0 {
			n = k
		}
		if c := firstControl(win[:n]); c < n {
			return i + c
		}
		if n < len(win) {
			return i + n // a quote or a backslash
		}
		i += n
	}
	return i
}

// plainWindow is how far plainRun looks for a quote at a time.
const plainWindow = 4 << 10

// firstControl returns the index of the first byte of b below 0x20, or
// len(b): 32 bytes a step while none is there, then word by word.
func firstControl(b []byte) int {
	s := b
	for len(s) >= 32 {
		w0 := binary.LittleEndian.Uint64(s)
		w1 := binary.LittleEndian.Uint64(s[8:])
		w2 := binary.LittleEndian.Uint64(s[16:])
		w3 := binary.LittleEndian.Uint64(s[24:])
		if (control(w0)|control(w1)|control(w2)|control(w3))&highs != 0 {
			break
		}
		s = s[32:]
	}
	for len(s) >= 8 {
		if m := control(binary.LittleEndian.Uint64(s)) & highs; m != 0 {
			return len(b) - len(s) + bits.TrailingZeros64(m)/8
		}
		s = s[8:]
	}
	for k, c := range s {
		if c < 0x20 {
			return len(b) - len(s) + k
		}
	}
	return len(b)
}

// control flags, in each byte's high bit (with highs), the bytes of w
// below 0x20; as in special, the lowest flagged byte is exact.
func control(w uint64) uint64 { return (w - ones*0x20) &^ w }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
