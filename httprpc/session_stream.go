package httprpc

import (
	"net/http"
	"sort"
	"time"
)

// streamWriteTimeout bounds each write of an event stream: a client that
// takes no data for this long loses the response (and may resume it).
// (A variable for the tests that hold it.)
var streamWriteTimeout = 30 * time.Second

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
	if st.num == 0 {
		ss.getOpened = true
	}
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		if st.writer == a {
			st.writer = nil
			ss.wakeRoom() // a write waiting for room may have to give up
			if st.cancelled || st.ended {
				// Its calls were cancelled, or its reply is in (sent whole
				// or not): kept for a resumption, within maxDoneStreams.
				ss.retire(st)
			}
		}
		ss.mu.Unlock()
	}()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set(SessionIDHeader, ss.id)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := ss.priming(st, cursor)
	keepalive := time.NewTimer(streamKeepalive)
	defer keepalive.Stop()
	var poll <-chan time.Time // MaxStreamDuration
	if d := ss.srv.MaxStreamDuration; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		poll = t.C
	}
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
		complete := st.ended && cursor >= st.last
		over := len(evs) == 0 && (complete || ss.cause != nil)
		wake := st.wake
		ss.mu.Unlock()
		if len(buf) > 0 {
			continue
		}
		if over {
			if !complete {
				// The session ended first: say so, or a client would
				// resume the stream of a session that is gone.
				_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
				_, _ = w.Write(ss.endedEvent())
				_ = rc.Flush()
			}
			return
		}
		select {
		case <-wake:
		case <-keepalive.C:
			buf = append(buf, ": keepalive\n\n"...)
		case <-poll:
			return // the client comes back with Last-Event-ID (SEP-1699)
		case <-a.stop:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// endedEvent is the last event of a stream that ends because its session
// ended: a client of ours (Dial) ends at once, with ErrSessionExpired,
// instead of resuming it; other readers do not dispatch an event of a type
// they do not know.
func (ss *session) endedEvent() []byte {
	why := "session ended"
	if ss.srv.shutting.Load() {
		why = "server shutting down"
	}
	return []byte("event: " + sessionEndedEvent + "\ndata: " + why + "\n\n")
}

// priming is the first event of a response writing st after seq cursor:
// its id (with an empty data line, so that every reader takes it; SSE's
// own readers dispatch nothing for it), by which a stream cut before its
// next event can be resumed, and the reconnection delay (StreamRetry).
func (ss *session) priming(st *stream, cursor uint64) []byte {
	b := []byte("id: " + eventID(st.num, cursor) + "\n")
	if d := limitOr(ss.srv.StreamRetry, DefaultStreamRetry); d > 0 {
		b = appendRetry(b, d)
	}
	return append(b, "data: \n\n"...)
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
// response, once it is in; answers 202 Accepted, with no body, once the
// client has cancelled its calls (no reply comes), or 404 if the session
// ends first.
func (ss *session) writeJSON(w http.ResponseWriter, r *http.Request, st *stream) {
	for {
		ss.mu.Lock()
		if st.ended && len(st.events) > 0 {
			data := st.events[len(st.events)-1].data
			ss.forget(st) // a JSON reply cannot be resumed: nothing to keep
			ss.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(SessionIDHeader, ss.id)
			_, _ = w.Write(data)
			return
		}
		if st.cancelled { // its calls were cancelled: no reply comes
			ss.forget(st)
			ss.mu.Unlock()
			w.Header().Set(SessionIDHeader, ss.id)
			w.WriteHeader(http.StatusAccepted)
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
			ss.mu.Lock()
			ss.abandonJSON(st)
			ss.mu.Unlock()
			return
		}
	}
}

// abandonJSON drops st, a JSON stream whose client went away: its reply,
// if in, is dropped now, else when it comes. Called with mu held.
func (ss *session) abandonJSON(st *stream) {
	if st.ended {
		ss.forget(st)
		return
	}
	st.gone = true
}

// serveGet opens the standalone stream, or resumes the stream that
// Last-Event-ID names.
func (s *SessionServer) serveGet(w http.ResponseWriter, r *http.Request) {
	if q, _ := acceptQ(r, "text/event-stream"); q == 0 {
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
