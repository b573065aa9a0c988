package httprpc

import (
	"bytes"
	"encoding/json"
	"fmt"

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
	if d == abandonDialect { // its ID matches nothing the server sends: read ours
		var p struct {
			ID jsonrpc.ID `json:"id"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.ID.IsZero() {
			return "", false
		}
		return p.ID.String(), true
	}
	id, ok := d.ID(m.Params)
	if !ok {
		return "", false
	}
	return id.String(), true
}

// requestMethod returns the method of msg, a request or a notification a
// Peer encoded; "" for anything else (a batch, a response).
func requestMethod(msg []byte) string {
	rest, ok := bytes.CutPrefix(msg, encodedHead)
	if !ok {
		return ""
	}
	if after, ok := bytes.CutPrefix(rest, []byte(`"id":`)); ok {
		rest = skipID(after)
		if rest, ok = bytes.CutPrefix(rest, []byte(`,`)); !ok {
			return ""
		}
	}
	rest, ok = bytes.CutPrefix(rest, []byte(`"method":`))
	if !ok {
		return ""
	}
	var method string
	if end := skipID(rest); end != nil && json.Unmarshal(rest[:len(rest)-len(end)], &method) == nil {
		return method
	}
	return ""
}

// describeCalls names a POST of n calls, for errors: the method of one, a
// batch of several.
func describeCalls(method string, n int) string {
	if n == 1 && method != "" {
		return method
	}
	return fmt.Sprintf("a batch of %d calls", n)
}

// describeNoCall names a POST of msg, which holds no call, for errors.
func describeNoCall(msg []byte) string {
	switch {
	case encodedReply(msg):
		return "a reply"
	case len(msg) > 0 && msg[0] == '[':
		return "a batch of notifications"
	}
	if m := requestMethod(msg); m != "" {
		return "the notification " + m
	}
	return "a message"
}

// abandonDialect is the cancel dialect Dial gives a Peer that has none, so
// that a call given up by its ctx tells the connection, which stops
// waiting for its reply (its MaxInFlight slot is given back, or it leaves
// the queue). Its notification never leaves the client; none the server
// sends matches it (its ID names none).
var abandonDialect = &jsonrpc.CancelDialect{
	Method: "httprpc.Dial/abandoned",
	Params: func(id jsonrpc.ID) json.RawMessage { return json.RawMessage(`{"id":` + id.String() + `}`) },
	ID:     func(json.RawMessage) (jsonrpc.ID, bool) { return jsonrpc.ID{}, false },
}
