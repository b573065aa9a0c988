package httprpc

import (
	"net/http"
	"sort"
	"strings"
	"time"
)

// streamWriteTimeout bounds each write of an event stream: a client that
// takes no data for this long loses the response (and may resume it).
const streamWriteTimeout = 30 * time.Second

// streamKeepalive is how long an event stream may stay silent: then a
// comment line goes out, so that proxies keep it open, and a client that
// vanished without closing its connection is found (the write fails once
// the operating system gives up on it), which ends the response: a
// session with an open stream is never idle.
const streamKeepalive = 30 * time.Second

// attachment is one response writing a stream; stop is closed when
// another replaces it.
type attachment struct{ stop chan struct{} }

// writeStream writes st's events after seq cursor as an event stream,
// live, until st has ended and all of it is written, the session ends
// (what is buffered is written first), the client goes away, or another
// response takes st over.
func (ss *session) writeStream(w http.ResponseWriter, r *http.Request, st *stream, cursor uint64) {
	a := &attachment{stop: make(chan struct{})}
	ss.mu.Lock()
	if old := st.writer; old != nil {
		close(old.stop)
	}
	st.writer = a
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		if st.writer == a {
			st.writer = nil
		}
		ss.mu.Unlock()
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set(SessionIDHeader, ss.id)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := appendEvent(nil, eventID(st.num, cursor), nil) // priming: its id resumes the stream
	keepalive := time.NewTimer(streamKeepalive)
	defer keepalive.Stop()
	for {
		if len(buf) > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if _, err := w.Write(buf); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			buf = buf[:0]
			keepalive.Reset(streamKeepalive)
		}
		ss.mu.Lock()
		if st.writer != a {
			ss.mu.Unlock()
			return
		}
		ss.markSent(st, cursor)
		evs := st.after(cursor)
		for _, e := range evs {
			buf = appendEvent(buf, eventID(st.num, e.seq), e.data)
			cursor = e.seq
		}
		over := len(evs) == 0 && (st.ended && cursor >= st.last || ss.cause != nil)
		wake := st.wake
		ss.mu.Unlock()
		if len(buf) > 0 {
			continue
		}
		if over {
			return
		}
		select {
		case <-wake:
		case <-keepalive.C:
			buf = append(buf, ": keepalive\n\n"...)
		case <-a.stop:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// after returns the events kept after seq. Called with mu held.
func (st *stream) after(seq uint64) []event {
	i := sort.Search(len(st.events), func(i int) bool { return st.events[i].seq > seq })
	return st.events[i:]
}

// resumable reports whether every event after seq is still kept. Called
// with mu held.
func (st *stream) resumable(seq uint64) bool {
	if seq > st.last {
		return false
	}
	if seq == st.last {
		return true
	}
	return len(st.events) > 0 && st.events[0].seq <= seq+1
}

// writeJSON writes st's reply as the application/json body of the
// response, once it is in, or answers 404 if the session ends first.
func (ss *session) writeJSON(w http.ResponseWriter, r *http.Request, st *stream) {
	for {
		ss.mu.Lock()
		if st.ended && len(st.events) > 0 {
			data := st.events[len(st.events)-1].data
			ss.markSent(st, st.last)
			ss.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(SessionIDHeader, ss.id)
			_, _ = w.Write(data)
			return
		}
		closed, wake := ss.cause != nil, st.wake
		ss.mu.Unlock()
		if closed {
			http.Error(w, "session ended", http.StatusNotFound)
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		}
	}
}

// serveGet opens the standalone stream, or resumes the stream that
// Last-Event-ID names.
func (s *SessionServer) serveGet(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "text/event-stream") {
		http.Error(w, "a GET must accept text/event-stream", http.StatusNotAcceptable)
		return
	}
	ss := s.lookup(w, r)
	if ss == nil || !ss.entered(w) {
		return
	}
	defer ss.leave()
	var num, seq uint64
	resume := r.Header.Get(lastEventIDHeader)
	if resume != "" {
		var err error
		if num, seq, err = parseEventID(resume); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	ss.mu.Lock()
	st := ss.streams[num]
	ok := st != nil
	switch {
	case !ok:
	case resume == "":
		seq = st.sent
	default:
		ok = st.resumable(seq)
	}
	ss.mu.Unlock()
	if !ok {
		http.Error(w, "the stream's events after "+resume+" are no longer kept", http.StatusGone)
		return
	}
	ss.writeStream(w, r, st, seq)
}

// entered counts a request into the session, or answers 404 if the
// session has just ended.
func (ss *session) entered(w http.ResponseWriter) bool {
	if !ss.enter() {
		http.Error(w, "unknown or expired session", http.StatusNotFound)
		return false
	}
	return true
}

// accepts reports whether r's Accept header takes mediaType: by name,
// by its type's wildcard, or by */*. A request without Accept takes all.
func accepts(r *http.Request, mediaType string) bool {
	vals := r.Header.Values("Accept")
	if len(vals) == 0 {
		return true
	}
	major, _, _ := strings.Cut(mediaType, "/")
	for _, v := range vals {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.ToLower(strings.TrimSpace(name))
			if strings.Contains(strings.ReplaceAll(params, " ", ""), "q=0") && !strings.Contains(params, "q=0.") {
				continue // q=0: refused
			}
			if name == mediaType || name == "*/*" || name == major+"/*" {
				return true
			}
		}
	}
	return false
}

// acceptsExplicitly reports whether r's Accept header names mediaType
// itself (a wildcard does not count).
func acceptsExplicitly(r *http.Request, mediaType string) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			name, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(name), mediaType) {
				return true
			}
		}
	}
	return false
}
