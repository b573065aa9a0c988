package httprpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/peerwire/jsonrpc"
)

// servePost hands a POST's message to its session's Peer (starting the
// session if the POST names none) and answers with the reply's stream, the
// reply as JSON, or 202.
func (s *SessionServer) servePost(w http.ResponseWriter, r *http.Request) {
	if !isJSON(r.Header.Get("Content-Type")) {
		http.Error(w, "a POST's body must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	sse := acceptsExplicitly(r, "text/event-stream")
	if !sse && !accepts(r, "application/json") {
		http.Error(w, "a POST must accept application/json or text/event-stream", http.StatusNotAcceptable)
		return
	}
	max := limitOr(s.MaxBodySize, DefaultMaxBodySize)
	body, status := readBody(w, r, max)
	switch status {
	case 0:
	case http.StatusRequestEntityTooLarge:
		http.Error(w, "body over "+strconv.FormatInt(max, 10)+" bytes", status)
		return
	default:
		http.Error(w, "failed to read the body", status)
		return
	}
	if cap(body) > len(body)+len(body)/8+1 {
		body = bytes.Clone(body) // a session's Peer keeps the last message it read
	}
	call := expectsReply(body)
	var ss *session
	switch {
	case r.Header.Get(SessionIDHeader) != "":
		ss = s.lookup(w, r)
	case !call:
		http.Error(w, "missing "+SessionIDHeader+" header: a session starts with a request", http.StatusBadRequest)
		return
	default:
		ss = s.start(w, r)
	}
	if ss == nil || !ss.entered(w) {
		return
	}
	defer ss.leave()
	if !call {
		ss.postAccepted(w, r, body)
		return
	}
	ss.mu.Lock()
	st := ss.newStream(!sse)
	ss.mu.Unlock()
	if _, err := ss.post(body, st); err != nil {
		ss.mu.Lock()
		ss.forget(st)
		ss.mu.Unlock()
		postFailed(w, err)
		return
	}
	// The message is served whatever becomes of this response: a client
	// that goes away may resume the stream.
	if sse {
		ss.writeStream(w, r, st, 0)
	} else {
		ss.writeJSON(w, r, st)
	}
}

// postAccepted hands body, which holds no request, to the Peer and
// answers 202 once the Peer has read it: a client that posts faster than
// the Peer reads is held back.
func (ss *session) postAccepted(w http.ResponseWriter, r *http.Request, body []byte) {
	m, err := ss.post(body, nil)
	if err != nil {
		postFailed(w, err)
		return
	}
	select {
	case <-m.taken:
		w.Header().Set(SessionIDHeader, ss.id)
		w.WriteHeader(http.StatusAccepted)
	case <-r.Context().Done():
		ss.withdraw(m) // if not taken yet; the client has gone either way
	case <-ss.closed:
		http.Error(w, "session ended", http.StatusNotFound)
	}
}

// postFailed answers a POST its session did not take: 503 with a JSON-RPC
// error when the inbox is full, 404 when the session has ended.
func postFailed(w http.ResponseWriter, err error) {
	if errors.Is(err, errInboxFull) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(errorBody(jsonrpc.CodeOverloaded, err.Error()))
		return
	}
	http.Error(w, "session ended", http.StatusNotFound)
}

// expectsReply reports whether the Peer answers body: whether it holds a
// request with an id, or anything but a notification or a response (which
// the Peer answers with an error), as the Peer's reader tells them apart.
func expectsReply(body []byte) bool {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return true
	}
	if body[0] != '[' {
		return answered(body)
	}
	var els []json.RawMessage
	if json.Unmarshal(body, &els) != nil || len(els) == 0 {
		return true
	}
	for _, el := range els {
		if answered(el) {
			return true
		}
	}
	return false
}

// answered reports whether one message is answered: all but a valid
// notification and a response (keys matched exactly, as the Peer does).
func answered(msg []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m == nil {
		return true
	}
	method, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if !hasMethod && (hasResult || hasError) {
		return false // a response, valid or not: never answered
	}
	if _, hasID := m["id"]; hasID {
		return true
	}
	var version, name string
	if json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" ||
		json.Unmarshal(method, &name) != nil || len(method) == 0 || method[0] != '"' {
		return true
	}
	if params, ok := m["params"]; ok {
		p := bytes.TrimSpace(params)
		if len(p) == 0 || p[0] != '{' && p[0] != '[' {
			return true
		}
	}
	return false
}

// errorBody is a JSON-RPC error response naming no call.
func errorBody(code int64, msg string) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": msg},
	})
	return b
}
