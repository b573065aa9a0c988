package httprpc

import "bytes"

// The Conns of this package are handed only what a Peer encoded, and a
// Peer encodes every message one way: a request or notification as
// {"jsonrpc":"2.0",("id":ID,)"method":..., a response as
// {"jsonrpc":"2.0","id":ID,"result"|"error":..., a batch as an array of
// those with no space. So a reply is told from a request by its first
// members, without parsing a message that may be megabytes long.

// encodedHead is how every message a Peer encodes begins.
var encodedHead = []byte(`{"jsonrpc":"2.0",`)

// encodedReply reports whether msg, encoded by a Peer, is a response or a
// batch of responses (and not a request, a notification or a batch of
// them).
func encodedReply(msg []byte) bool {
	if len(msg) > 0 && msg[0] == '[' {
		msg = msg[1:]
	}
	rest, ok := bytes.CutPrefix(msg, encodedHead)
	if !ok {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`"id":`)); !ok {
		return false // "method" first: a notification
	}
	rest = skipID(rest)
	return !bytes.HasPrefix(rest, []byte(`,"method":`))
}

// skipID returns b after the id token it begins with: a string (escapes
// skipped), or a number or null (up to the next comma).
func skipID(b []byte) []byte {
	if len(b) == 0 || b[0] != '"' {
		if i := bytes.IndexByte(b, ','); i >= 0 {
			return b[i:]
		}
		return nil
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[i+1:]
		}
	}
	return nil
}
