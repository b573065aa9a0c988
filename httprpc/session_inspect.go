package httprpc

import (
	"bytes"
	"encoding/json"

	"github.com/peerwire/jsonrpc"
)

// posted is what a SessionServer learns from a POST's body before its
// Peer reads it: whether the Peer answers it, the ids of its requests (for
// the ctx of their handlers, and for their cancellation), their methods
// (a session starts with some only), and the calls it cancels in the
// Peer's Cancel dialect.
type posted struct {
	answered bool     // the Peer answers it: a request, or anything invalid
	ids      []string // ids of its requests, as jsonrpc.ID.String spells them
	methods  []string // methods of its requests and notifications
	cancels  []string // ids of the calls its cancel notifications name
}

// inspect reads body as the Peer's reader will: a message, or a batch of
// them (one over maxBatch elements, when maxBatch > 0, is answered with an
// error as a whole). cancel is the Peer's Cancel dialect, or nil.
func inspect(body []byte, maxBatch int, cancel *jsonrpc.CancelDialect) posted {
	var p posted
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '[' {
		p.add(body, cancel)
		return p
	}
	var els []json.RawMessage
	if json.Unmarshal(body, &els) != nil || len(els) == 0 || maxBatch > 0 && len(els) > maxBatch {
		p.answered = true
		return p
	}
	for _, el := range els {
		p.add(el, cancel)
	}
	return p
}

// add takes one message: all but a valid notification and a response (keys
// matched exactly, as the Peer does) is answered.
func (p *posted) add(msg []byte, cancel *jsonrpc.CancelDialect) {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m == nil {
		p.answered = true
		return
	}
	method, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if !hasMethod && (hasResult || hasError) {
		return // a response, valid or not: never answered
	}
	var version, name string
	valid := json.Unmarshal(m["jsonrpc"], &version) == nil && version == "2.0" &&
		len(method) > 0 && method[0] == '"' && json.Unmarshal(method, &name) == nil
	if params, ok := m["params"]; ok {
		t := bytes.TrimSpace(params)
		valid = valid && len(t) > 0 && (t[0] == '{' || t[0] == '[')
	}
	if raw, hasID := m["id"]; hasID {
		p.answered = true
		var id jsonrpc.ID
		if valid && id.UnmarshalJSON(raw) == nil {
			p.ids = append(p.ids, id.String())
			p.methods = append(p.methods, name)
		}
		return
	}
	if !valid {
		p.answered = true
		return
	}
	p.methods = append(p.methods, name)
	if cancel != nil && cancel.NoReply && cancel.ID != nil && name == cancel.Method {
		if id, ok := cancel.ID(m["params"]); ok {
			p.cancels = append(p.cancels, id.String())
		}
	}
}
