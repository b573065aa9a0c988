package httprpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// isReply reports whether msg, as any server may write it (whitespace,
// members in any order), is a response or a batch of responses (and not a
// request, a notification or a batch of them). What a Peer of ours
// encoded is told apart without a parse: encodedReply.
func isReply(msg []byte) bool {
	var probe struct {
		Method json.RawMessage `json:"method"`
	}
	for i, c := range msg {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '[':
			var els []json.RawMessage
			if json.Unmarshal(msg[i:], &els) != nil || len(els) == 0 {
				return false
			}
			return json.Unmarshal(els[0], &probe) == nil && probe.Method == nil
		}
		return json.Unmarshal(msg[i:], &probe) == nil && probe.Method == nil
	}
	return false
}

// eventID names event seq of stream num.
func eventID(num, seq uint64) string {
	return strconv.FormatUint(num, 10) + "-" + strconv.FormatUint(seq, 10)
}

// errBadEventID is why a Last-Event-ID was refused (400).
var errBadEventID = errors.New("httprpc: malformed Last-Event-ID")

// parseEventID reads an id made by eventID.
func parseEventID(id string) (num, seq uint64, err error) {
	for i := 0; i < len(id); i++ {
		if id[i] == '-' {
			num, err1 := strconv.ParseUint(id[:i], 10, 64)
			seq, err2 := strconv.ParseUint(id[i+1:], 10, 64)
			if err1 != nil || err2 != nil {
				break
			}
			return num, seq, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: %q", errBadEventID, id)
}
