package httprpc

import (
	"bytes"
	"encoding/json"

	"github.com/peerwire/jsonrpc"
)

// What a dialled connection learns from the messages it carries: the ids
// of the requests a POST holds (its stream is done once each has its
// reply), the ids a response answers, and the call a cancel notification
// names (its stream is then abandoned).

// requestIDs returns the ids of the requests msg holds, as ID.String
// spells them, a request or a batch that a Peer encoded; none for
// notifications and responses.
func requestIDs(msg []byte) []string {
	if len(msg) > 0 && msg[0] != '[' {
		if encodedReply(msg) {
			return nil
		}
		rest, ok := bytes.CutPrefix(msg, encodedHead)
		if ok {
			rest, ok = bytes.CutPrefix(rest, []byte(`"id":`))
		}
		if !ok {
			return nil // a notification ("method" first), or not a Peer's
		}
		after := skipID(rest)
		var id jsonrpc.ID
		if id.UnmarshalJSON(rest[:len(rest)-len(after)]) != nil {
			return nil
		}
		return []string{id.String()}
	}
	var els []struct {
		ID     *jsonrpc.ID     `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if json.Unmarshal(msg, &els) != nil {
		return nil
	}
	var ids []string
	for _, el := range els {
		if el.ID != nil && el.Method != nil {
			ids = append(ids, el.ID.String())
		}
	}
	return ids
}

// replyIDs returns the ids that data, an event's or a body's message as
// any server may write it, answers: those of a response, or of each
// response of a batch; none for anything else.
func replyIDs(data []byte) []string {
	if !isReply(data) {
		return nil
	}
	type resp struct {
		ID *jsonrpc.ID `json:"id"`
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		var els []resp
		if json.Unmarshal(t, &els) != nil {
			return nil
		}
		ids := make([]string, 0, len(els))
		for _, el := range els {
			if el.ID != nil {
				ids = append(ids, el.ID.String())
			}
		}
		return ids
	}
	var r resp
	if json.Unmarshal(data, &r) != nil || r.ID == nil {
		return nil
	}
	return []string{r.ID.String()}
}

// cancelTarget returns the id of the call that msg, a notification a Peer
// encoded, cancels in dialect d; false if msg is no such notification.
func cancelTarget(msg []byte, d *jsonrpc.CancelDialect) (string, bool) {
	if d == nil || d.ID == nil {
		return "", false
	}
	rest, ok := bytes.CutPrefix(msg, encodedHead)
	if !ok {
		return "", false
	}
	method, _ := json.Marshal(d.Method)
	if !bytes.HasPrefix(rest, append([]byte(`"method":`), method...)) {
		return "", false
	}
	var m struct {
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return "", false
	}
	id, ok := d.ID(m.Params)
	if !ok {
		return "", false
	}
	return id.String(), true
}
