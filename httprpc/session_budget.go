package httprpc

import (
	"fmt"
	"slices"
)

// A session's budget (MaxBufferedBytes) counts what its events and the
// streams kept for resumption hold: each event at its data's length plus
// eventOverhead, each stream kept once its reply is in (sent whole or
// not) at streamOverhead. When room is needed it drops, in turn, the
// oldest events already sent, the oldest streams kept whose client is not
// reading them (a reply whose client left before it came: its resumption
// then gets 410), and the oldest events of a standalone stream that no
// client has opened; only then does a write wait for a reading client, or
// end the session (ErrSlowClient).

// eventOverhead is what an event holds besides its data: its place in its
// stream's slice (seq, age, the data's header) and the rounding of its
// data's allocation.
const eventOverhead = 64

// streamOverhead is what a stream kept for resumption holds besides its
// events: the stream itself, its wake channel, its entries in the
// session's maps and lists (measured in TestSessionOrphanStreamsBounded).
const streamOverhead = 256

// cost is what the budget counts for an event of data.
func cost(data []byte) int { return len(data) + eventOverhead }

// makeRoom frees what is kept only for resumption, or what no client has
// asked for, until n more bytes fit the budget, or fails. Called with mu
// held.
func (ss *session) makeRoom(n int) error {
	max := limitOr(ss.srv.MaxBufferedBytes, DefaultMaxBufferedBytes)
	if max < 0 {
		return nil
	}
	for ss.bytes > 0 && ss.bytes+n > max {
		if !ss.dropOldestSent() && !ss.forgetOldestKept() && !ss.dropUnopened(0) {
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
		ss.sentBytes += cost(e.data)
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
	n := cost(oldest.events[0].data)
	ss.bytes -= n
	ss.sentBytes -= n
	oldest.dropFirst()
	return true
}

// dropFirst drops st's first event. Called with mu held.
func (st *stream) dropFirst() {
	st.bytes -= cost(st.events[0].data)
	st.events[0] = event{}
	st.events = st.events[1:]
}

// forgetOldestKept forgets the oldest stream kept for resumption that no
// client is reading, and reports false if there is none. Called with mu
// held.
func (ss *session) forgetOldestKept() bool {
	for _, st := range ss.done {
		if st.writer == nil {
			ss.forget(st)
			return true
		}
	}
	return false
}

// dropUnopened drops the oldest events of the standalone stream while no
// client has opened it, until it holds at most keep bytes, and reports
// whether it dropped any. Such events (what the server sends outside any
// call, for a GET stream the transport makes optional) would otherwise
// fill the budget of a client that reads every stream it opens: they are
// dropped, oldest first, logged once. Called with mu held.
func (ss *session) dropUnopened(keep int) bool {
	st := ss.streams[0]
	if ss.getOpened || st == nil || len(st.events) == 0 || st.bytes <= keep {
		return false
	}
	dropped := 0
	for len(st.events) > 0 && st.bytes > keep {
		ss.bytes -= cost(st.events[0].data)
		st.dropFirst()
		dropped++
	}
	if !ss.droppedUnopened {
		ss.droppedUnopened = true
		ss.srv.logger().Debug("httprpc: dropping what the server sends outside any call: the client has not opened the session's GET stream",
			"session", ss.id, "dropped", dropped)
	}
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
// for resumption, the oldest of which is forgotten, and charges it
// streamOverhead. Called with mu held.
func (ss *session) retire(st *stream) {
	if st.num == 0 || ss.streams[st.num] != st || st.kept {
		return
	}
	st.kept = true
	ss.bytes += streamOverhead
	ss.done = append(ss.done, st)
	if len(ss.done) > maxDoneStreams {
		ss.forget(ss.done[0])
	}
}

// forget drops st and its events. Called with mu held.
func (ss *session) forget(st *stream) {
	for _, e := range st.events {
		ss.bytes -= cost(e.data)
		if e.seq <= st.sent {
			ss.sentBytes -= cost(e.data)
		}
	}
	st.events, st.bytes = nil, 0
	if st.kept {
		st.kept = false
		ss.bytes -= streamOverhead
		if i := slices.Index(ss.done, st); i >= 0 {
			ss.done = slices.Delete(ss.done, i, i+1)
		}
	}
	delete(ss.streams, st.num)
	if ss.byRead[st.read] == st {
		delete(ss.byRead, st.read)
	}
	ss.endStream(st)
	ss.wakeRoom()
}

// waitRoom makes room for n more bytes of events: it frees what makeRoom
// may, and while that is not enough waits for a client to take some, as
// long as one reads a stream that holds events not taken yet (a stream
// whose client takes nothing for streamWriteTimeout loses its response,
// and so its reader). With none, it ends the session with ErrSlowClient.
// Called with mu held, which it releases while it waits.
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
