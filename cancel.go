package jsonrpc

import "encoding/json"

// A CancelDialect is how a protocol built on JSON-RPC cancels a call: a
// notification named Method whose params name the call's id. The
// specification itself defines none; see Options.Cancel.
type CancelDialect struct {
	// Method is the notification's method.
	Method string
	// Params returns the params of the notification that cancels id.
	Params func(id ID) json.RawMessage
	// ID returns the id that params name, and false if they name none.
	ID func(params json.RawMessage) (ID, bool)
	// NoReply: a call that the remote side cancelled gets no reply at
	// all, as MCP asks ("SHOULD NOT send a response"). Otherwise it is
	// answered as usual, with CodeRequestCancelled if its handler returns
	// the ctx's error (LSP's way).
	NoReply bool
}

// LSPCancel is the Language Server Protocol's dialect:
// "$/cancelRequest" with params {"id": id}.
var LSPCancel = &CancelDialect{
	Method: "$/cancelRequest",
	Params: func(id ID) json.RawMessage { return idParams(`{"id":`, id, `}`) },
	ID:     func(params json.RawMessage) (ID, bool) { return idMember(params, "id") },
}

// MCPCancel is the Model Context Protocol's dialect:
// "notifications/cancelled" with params {"requestId": id, "reason": ...};
// a call cancelled so gets no reply.
var MCPCancel = &CancelDialect{
	Method: "notifications/cancelled",
	Params: func(id ID) json.RawMessage {
		return idParams(`{"requestId":`, id, `,"reason":"the caller stopped waiting"}`)
	},
	ID:      func(params json.RawMessage) (ID, bool) { return idMember(params, "requestId") },
	NoReply: true,
}

// idParams returns before + id + after, the id as the raw JSON it is.
func idParams(before string, id ID, after string) json.RawMessage {
	b := make([]byte, 0, len(before)+len(id.raw)+len(after))
	return append(append(append(b, before...), id.raw...), after...)
}

// idMember returns the id held by member name of an object, as the raw
// JSON text the other side sent.
func idMember(params json.RawMessage, name string) (ID, bool) {
	// A scan, not an unmarshal into a map: this runs for every cancel
	// and every progress report (21 allocations each, as a map).
	if !validJSON(trimSpace(params)) {
		return ID{}, false
	}
	raw := trimSpace(objMember(params, name))
	if raw == nil || !validIDToken(raw) || string(raw) == "null" {
		return ID{}, false
	}
	return ID{raw: string(raw)}, true
}
