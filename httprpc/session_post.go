package httprpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

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
	// An event stream when the client names it (a wildcard does not
	// count: clients that take both say so), or when it takes no JSON but
	// takes an event stream through a wildcard.
	qSSE, named := acceptQ(r, "text/event-stream")
	qJSON, _ := acceptQ(r, "application/json")
	sse := qSSE > 0 && (named || qJSON == 0)
	if !sse && qJSON == 0 {
		http.Error(w, "a POST must accept application/json or text/event-stream", http.StatusNotAcceptable)
		return
	}
	body, ok := s.readBodyBounded(w, r)
	if !ok {
		return
	}
	if cap(body) > len(body)+len(body)/8+1 {
		body = bytes.Clone(body) // a session's Peer keeps the last message it read
	}
	p := inspect(body, max(limitOr(s.Peer.MaxBatch, defaultMaxBatch), 0), s.Peer.Cancel)
	var ss *session
	switch {
	case r.Header.Get(SessionIDHeader) != "":
		if ss = s.lookup(w, r); ss != nil && len(p.ids) > 0 {
			ss.markUsed()
		}
	case !s.starts(p):
		http.Error(w, "missing "+SessionIDHeader+" header: a session starts with a request of "+strings.Join(s.startMethods(), ", ")+" only", http.StatusBadRequest)
		return
	default:
		ss = s.start(w, r)
	}
	if ss == nil || !ss.entered(w) {
		return
	}
	defer ss.leave()
	if !p.answered {
		ss.postAccepted(w, r, body, p)
		return
	}
	ss.mu.Lock()
	st := ss.newStream(!sse)
	ss.mu.Unlock()
	if _, err := ss.post(r.Context(), body, p, st); err != nil {
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

// defaultMaxBatch is jsonrpc.Options.MaxBatch's default, which the Peer
// applies.
const defaultMaxBatch = 1000

// starts reports whether p, posted without a session id, starts one: it
// holds requests, of StartMethods only.
func (s *SessionServer) starts(p posted) bool {
	if len(p.ids) == 0 || len(p.methods) != len(p.ids) {
		return false
	}
	for _, m := range p.methods {
		if !slices.Contains(s.startMethods(), m) {
			return false
		}
	}
	return true
}

func (s *SessionServer) startMethods() []string {
	if s.StartMethods == nil {
		return DefaultStartMethods
	}
	return s.StartMethods
}

// readBodyBounded reads r's body within MaxBodies, or answers r and
// returns false.
func (s *SessionServer) readBodyBounded(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	s.once.Do(func() {
		if n := limitOr(s.MaxBodies, DefaultMaxBodies); n > 0 {
			s.bodies = make(chan struct{}, n)
		}
	})
	if s.bodies != nil {
		select {
		case s.bodies <- struct{}{}:
			defer func() { <-s.bodies }()
		default:
			// Connection: close, or net/http would wait for the body's
			// rest to reuse the connection before the answer goes out.
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			refuse(w, http.StatusServiceUnavailable, jsonrpc.CodeOverloaded, "too many request bodies being received at once")
			return nil, false
		}
	}
	max := limitOr(s.MaxBodySize, DefaultMaxBodySize)
	body, status := readBody(w, r, max)
	switch status {
	case 0:
		return body, true
	case http.StatusRequestEntityTooLarge:
		http.Error(w, "body over "+strconv.FormatInt(max, 10)+" bytes", status)
	default:
		http.Error(w, "failed to read the body", status)
	}
	return nil, false
}

// postAccepted hands body, which holds no request, to the Peer and
// answers 202 once the Peer has read it: a client that posts faster than
// the Peer reads is held back.
func (ss *session) postAccepted(w http.ResponseWriter, r *http.Request, body []byte, p posted) {
	m, err := ss.post(r.Context(), body, p, nil)
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
		refuse(w, http.StatusServiceUnavailable, jsonrpc.CodeOverloaded, err.Error())
		return
	}
	http.Error(w, "session ended", http.StatusNotFound)
}

// errorBody is a JSON-RPC error response naming no call.
func errorBody(code int64, msg string) []byte {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": msg},
	})
	return b
}
