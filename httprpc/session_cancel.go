package httprpc

import (
	"bytes"
	"encoding/json"
	"slices"
)

// A call that the client cancels, in a dialect whose cancelled calls get
// no reply (jsonrpc.MCPCancel: CancelDialect.NoReply), would leave the
// event stream of its POST open for as long as the session lives: only a
// reply ends a POST's stream. So the session keeps each such stream's call
// ids, and once the Peer has read a cancel naming the last of them, the
// stream ends: what the cancelled handler still sends goes to the
// standalone stream, as for any stream that has ended.

// callIDs returns the ids of the calls in body (one message or a batch),
// as their raw JSON.
func callIDs(body []byte) [][]byte {
	var els []json.RawMessage
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &els) != nil {
			return nil
		}
	} else {
		els = []json.RawMessage{body}
	}
	var ids [][]byte
	for _, el := range els {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if json.Unmarshal(el, &m) == nil && m.Method != nil && len(m.ID) > 0 {
			ids = append(ids, bytes.Clone(m.ID))
		}
	}
	return ids
}

// cancelled ends the streams whose calls the cancel notifications in body
// (which the Peer has read) leave without a reply to come.
func (ss *session) cancelled(body []byte) {
	c := ss.srv.Peer.Cancel
	if c == nil || !c.NoReply || !bytes.Contains(body, []byte(c.Method)) {
		return
	}
	var els []json.RawMessage
	if body = bytes.TrimSpace(body); len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &els) != nil {
			return
		}
	} else {
		els = []json.RawMessage{body}
	}
	for _, el := range els {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(el, &m) != nil || m.Method != c.Method || c.ID == nil {
			continue
		}
		id, ok := c.ID(m.Params)
		if !ok {
			continue
		}
		raw, err := id.MarshalJSON()
		if err != nil {
			continue
		}
		ss.endCancelled(raw)
	}
}

// endCancelled takes the call id raw off the stream awaiting it, and ends
// that stream if none of its calls is left to answer.
func (ss *session) endCancelled(raw []byte) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for read, st := range ss.byRead {
		i := slices.IndexFunc(st.ids, func(id []byte) bool { return bytes.Equal(id, raw) })
		if i < 0 {
			continue
		}
		st.ids = slices.Delete(st.ids, i, i+1)
		if len(st.ids) == 0 {
			delete(ss.byRead, read)
			st.ended = true
			st.signal()
		}
		return
	}
}
