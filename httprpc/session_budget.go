package httprpc

import "fmt"

// makeRoom drops sent events, oldest first, until n more bytes fit the
// budget, or fails. Called with mu held.
func (ss *session) makeRoom(n int) error {
	max := limitOr(ss.srv.MaxBufferedBytes, DefaultMaxBufferedBytes)
	if max < 0 {
		return nil
	}
	for ss.bytes > 0 && ss.bytes+n > max {
		if !ss.dropOldestSent() {
			return fmt.Errorf("%w: %d bytes of events not taken, over the budget of %d", ErrSlowClient, ss.bytes+n, max)
		}
	}
	return nil
}

// markSent records that st's events up to seq have been written: they
// are kept for resumption within a quarter of the budget, oldest dropped
// first. Called with mu held.
func (ss *session) markSent(st *stream, seq uint64) {
	if seq <= st.sent {
		return
	}
	for _, e := range st.after(st.sent) {
		if e.seq > seq {
			break
		}
		ss.sentBytes += len(e.data)
	}
	st.sent = seq
	ss.wakeRoom()
	if max := limitOr(ss.srv.MaxBufferedBytes, DefaultMaxBufferedBytes); max >= 0 {
		for ss.sentBytes > max/4 && ss.dropOldestSent() {
		}
	}
	ss.finished(st)
}

// dropOldestSent drops the oldest event kept only for resumption, and
// reports false if there is none. Called with mu held.
func (ss *session) dropOldestSent() bool {
	var oldest *stream
	for _, st := range ss.streams {
		if len(st.events) > 0 && st.events[0].seq <= st.sent &&
			(oldest == nil || st.events[0].age < oldest.events[0].age) {
			oldest = st
		}
	}
	if oldest == nil {
		return false
	}
	n := len(oldest.events[0].data)
	ss.bytes -= n
	ss.sentBytes -= n
	oldest.events[0] = event{}
	oldest.events = oldest.events[1:]
	return true
}

// finished records that st, ended, has been written whole: it is kept a
// while for resumption. Called with mu held.
func (ss *session) finished(st *stream) {
	if !st.ended || st.sent < st.last {
		return
	}
	ss.retire(st)
}

// retire keeps st, which nothing more will be appended to (its reply is
// in, or its calls were cancelled), among the maxDoneStreams streams kept
// for resumption, the oldest of which is forgotten. Called with mu held.
func (ss *session) retire(st *stream) {
	if st.num == 0 || ss.streams[st.num] != st {
		return
	}
	for _, d := range ss.done {
		if d == st {
			return
		}
	}
	ss.done = append(ss.done, st)
	if len(ss.done) > maxDoneStreams {
		old := ss.done[0]
		ss.done = ss.done[1:]
		ss.forget(old)
	}
}

// forget drops st and its events. Called with mu held.
func (ss *session) forget(st *stream) {
	for _, e := range st.events {
		ss.bytes -= len(e.data)
		if e.seq <= st.sent {
			ss.sentBytes -= len(e.data)
		}
	}
	st.events = nil
	delete(ss.streams, st.num)
	if ss.byRead[st.read] == st {
		delete(ss.byRead, st.read)
	}
	ss.endStream(st)
	ss.wakeRoom()
}

// waitRoom makes room for n more bytes of events: it drops sent events,
// and while that is not enough waits for a client to take some, as long
// as one reads a stream that holds events not taken yet (a stream whose
// client takes nothing for streamWriteTimeout loses its response, and so
// its reader). With none, it ends the session with ErrSlowClient. Called
// with mu held, which it releases while it waits.
func (ss *session) waitRoom(n int) error {
	for {
		err := ss.makeRoom(n)
		if err == nil {
			return nil
		}
		if !ss.draining() {
			ss.endLocked(err)
			return err
		}
		room := ss.room
		ss.mu.Unlock()
		select {
		case <-room:
		case <-ss.closed:
		}
		ss.mu.Lock()
		if ss.cause != nil {
			return ss.cause
		}
	}
}

// draining reports whether a client reads a stream that holds events not
// taken yet. Called with mu held.
func (ss *session) draining() bool {
	for _, st := range ss.streams {
		if st.writer != nil && st.sent < st.last {
			return true
		}
	}
	return false
}

// wakeRoom wakes the writes that wait for room. Called with mu held.
func (ss *session) wakeRoom() {
	close(ss.room)
	ss.room = make(chan struct{})
}
