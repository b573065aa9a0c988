package httprpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// session is one session's state, and the jsonrpc.Conn its Peer runs on:
// Read returns what its POSTs carried, in the order they were posted;
// WriteFor puts each message the Peer sends on the stream of the POST it
// belongs to, or on the standalone stream (number 0).
//
// Everything below is under mu.
type session struct {
	srv *SessionServer
	id  string

	mu        sync.Mutex
	peer      *jsonrpc.Peer
	inbox     []*inMsg           // posted, not read yet
	inBytes   int                // bytes of the inbox
	inWake    chan struct{}      // 1-buffered: the inbox has grown
	reads     uint64             // successful Reads: the Peer's ordinals (see jsonrpc.Router)
	byRead    map[uint64]*stream // streams awaiting the reply to that Read
	streams   map[uint64]*stream // streams that can be written or resumed, by number
	next      uint64             // the number of the next POST stream
	done      []*stream          // ended streams fully sent, kept for resumption, oldest first
	bytes     int                // bytes of the events kept
	sentBytes int                // of which sent, kept for resumption
	gseq      uint64             // events appended so far, all streams: their age
	closed    chan struct{}      // closed by end
	cause     error              // why it ended
	busy      int                // requests being served now
	active    time.Time          // when the last request ended, or the session began
	idle      *time.Timer        // ends the session once idle; nil without IdleTimeout
}

// inMsg is one posted message waiting to be read.
type inMsg struct {
	data  []byte
	st    *stream       // the stream its reply goes on, or nil
	taken chan struct{} // closed once Read returned it
}

// stream is one event stream: a POST's, up to its reply, or the
// standalone one, which never ends.
type stream struct {
	num    uint64
	events []event       // kept, by seq: sent ones (up to sent) for resumption, then unsent ones
	last   uint64        // seq of the last event appended
	sent   uint64        // highest seq written to a response
	ended  bool          // the reply is in: nothing more comes
	json   bool          // the POST takes JSON: only the reply goes on it
	writer *attachment   // the response writing it, or nil
	wake   chan struct{} // closed (and replaced) when an event is appended or the writer replaced
}

// event is one message on a stream.
type event struct {
	seq  uint64
	age  uint64 // session-wide order, for eviction
	data []byte
}

// maxDoneStreams bounds the ended streams kept for resumption per session.
const maxDoneStreams = 16

func newSession(srv *SessionServer, id string) *session {
	ss := &session{
		srv:     srv,
		id:      id,
		inWake:  make(chan struct{}, 1),
		byRead:  make(map[uint64]*stream),
		streams: make(map[uint64]*stream),
		next:    1,
		closed:  make(chan struct{}),
		active:  time.Now(),
	}
	ss.streams[0] = &stream{wake: make(chan struct{})}
	if d := limitOr(srv.IdleTimeout, DefaultIdleTimeout); d > 0 {
		ss.idle = time.AfterFunc(d, ss.checkIdle)
	}
	return ss
}

func (ss *session) setPeer(p *jsonrpc.Peer) {
	ss.mu.Lock()
	ss.peer = p
	ss.mu.Unlock()
}

func (ss *session) getPeer() *jsonrpc.Peer {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.peer
}

var (
	_ jsonrpc.Conn   = (*session)(nil)
	_ jsonrpc.Router = (*session)(nil)
)

// Read returns the next posted message, or the session's cause once it
// has ended.
func (ss *session) Read() ([]byte, error) {
	for {
		ss.mu.Lock()
		if ss.cause != nil {
			ss.mu.Unlock()
			return nil, ss.cause
		}
		if len(ss.inbox) > 0 {
			m := ss.inbox[0]
			ss.inbox[0] = nil
			ss.inbox = ss.inbox[1:]
			ss.inBytes -= len(m.data)
			ss.reads++
			if m.st != nil {
				ss.byRead[ss.reads] = m.st
			}
			close(m.taken)
			ss.mu.Unlock()
			return m.data, nil
		}
		ss.mu.Unlock()
		select {
		case <-ss.inWake:
		case <-ss.closed:
		}
	}
}

// errInboxFull is why a POST was refused (503): the messages posted and
// not yet read would pass twice MaxBodySize.
var errInboxFull = errors.New("httprpc: session overloaded: too many messages posted and not yet read")

// post queues data for Read, its reply for st (or nil), and returns the
// queued message. The inbox holds at most twice MaxBodySize (any one
// message if empty): its Peer reads it as it takes work, and pushes back
// on a client that sends notifications faster than its handlers take
// them by not reading.
func (ss *session) post(data []byte, st *stream) (*inMsg, error) {
	m := &inMsg{data: data, st: st, taken: make(chan struct{})}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cause != nil {
		return nil, ss.cause
	}
	if max := limitOr(ss.srv.MaxBodySize, DefaultMaxBodySize); max >= 0 && ss.inBytes > 0 && int64(ss.inBytes+len(data)) > 2*max {
		return nil, errInboxFull
	}
	ss.inBytes += len(data)
	ss.inbox = append(ss.inbox, m)
	select {
	case ss.inWake <- struct{}{}:
	default:
	}
	return m, nil
}

// withdraw takes m out of the inbox if Read has not taken it (its POST
// went away first), and reports whether it did.
func (ss *session) withdraw(m *inMsg) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for i, x := range ss.inbox {
		if x == m {
			ss.inbox = append(ss.inbox[:i], ss.inbox[i+1:]...)
			ss.inBytes -= len(m.data)
			return true
		}
	}
	return false
}

// Write sends msg on the standalone stream: for callers that are not a
// Peer (which calls WriteFor).
func (ss *session) Write(msg []byte) error { return ss.WriteFor(msg, 0) }

// WriteFor appends msg to the stream of the POST whose message the Peer's
// Read numbered read, or to the standalone stream when that stream has
// ended, takes only JSON (and msg is not the reply), or read is 0. It
// never waits: past MaxBufferedBytes it ends the session (ErrSlowClient).
func (ss *session) WriteFor(msg []byte, read uint64) error {
	reply := read != 0 && isReply(msg)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cause != nil {
		return net.ErrClosed
	}
	st := ss.streams[0]
	if t := ss.byRead[read]; t != nil && (reply || !t.json) {
		st = t
		if reply {
			delete(ss.byRead, read)
		}
	}
	if err := ss.makeRoom(len(msg)); err != nil {
		ss.endLocked(err)
		return err
	}
	ss.gseq++
	st.last++
	st.events = append(st.events, event{seq: st.last, age: ss.gseq, data: append([]byte(nil), msg...)})
	ss.bytes += len(msg)
	if st != ss.streams[0] && reply {
		st.ended = true
	}
	st.signal()
	return nil
}

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

// signal wakes the stream's writer. Called with mu held.
func (st *stream) signal() {
	close(st.wake)
	st.wake = make(chan struct{})
}

// finished records that st, ended, has been written whole: it is kept a
// while for resumption. Called with mu held.
func (ss *session) finished(st *stream) {
	if st.num == 0 || !st.ended || st.sent < st.last || ss.streams[st.num] != st {
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
}

// newStream starts a POST's stream. Called with mu held.
func (ss *session) newStream(jsonOnly bool) *stream {
	st := &stream{num: ss.next, json: jsonOnly, wake: make(chan struct{})}
	ss.next++
	ss.streams[st.num] = st
	return st
}

// Close ends the session: its Peer calls it when it ends.
func (ss *session) Close() error {
	ss.mu.Lock()
	ss.endLocked(jsonrpc.ErrClosed)
	ss.mu.Unlock()
	return nil
}

// end ends the session with cause (the first cause stays): its Peer's
// Read fails with it, which ends the Peer at once with that cause.
func (ss *session) end(cause error) {
	ss.mu.Lock()
	ss.endLocked(cause)
	ss.mu.Unlock()
}

// endLocked ends the session. Called with mu held.
func (ss *session) endLocked(cause error) {
	if ss.cause != nil {
		return
	}
	if cause == nil {
		cause = jsonrpc.ErrClosed
	}
	ss.cause = cause
	close(ss.closed)
	ss.inbox, ss.inBytes = nil, 0 // their POSTs see closed
	for _, st := range ss.streams {
		st.signal()
	}
	if ss.idle != nil {
		ss.idle.Stop()
	}
}

// enter counts a request being served: the session is not idle meanwhile.
// It reports false once the session has ended.
func (ss *session) enter() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cause != nil {
		return false
	}
	ss.busy++
	return true
}

// leave ends what enter counted.
func (ss *session) leave() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.busy--
	ss.active = time.Now()
}

// checkIdle ends the session if it has been idle for IdleTimeout, or
// looks again when it could be: it is not idle while a request is served,
// a stream is open, or a request's reply is awaited.
func (ss *session) checkIdle() {
	d := limitOr(ss.srv.IdleTimeout, DefaultIdleTimeout)
	ss.mu.Lock()
	if ss.cause != nil {
		ss.mu.Unlock()
		return
	}
	if ss.busy > 0 || len(ss.byRead) > 0 || len(ss.inbox) > 0 {
		ss.idle.Reset(d)
		ss.mu.Unlock()
		return
	}
	if left := d - time.Since(ss.active); left > 0 {
		ss.idle.Reset(left)
		ss.mu.Unlock()
		return
	}
	ss.mu.Unlock()
	ss.srv.drop(ss)
	ss.end(fmt.Errorf("%w for %v", ErrSessionIdle, d))
}

// isReply reports whether msg, as a Peer writes it, is a response or a
// batch of responses (and not a request, a notification or a batch of
// them).
func isReply(msg []byte) bool {
	var probe struct {
		Method json.RawMessage `json:"method"`
	}
	for i, c := range msg {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '[':
			var els []json.RawMessage
			if json.Unmarshal(msg[i:], &els) != nil || len(els) == 0 {
				return false
			}
			return json.Unmarshal(els[0], &probe) == nil && probe.Method == nil
		}
		return json.Unmarshal(msg[i:], &probe) == nil && probe.Method == nil
	}
	return false
}

// eventID names event seq of stream num.
func eventID(num, seq uint64) string {
	return strconv.FormatUint(num, 10) + "-" + strconv.FormatUint(seq, 10)
}

// errBadEventID is why a Last-Event-ID was refused (400).
var errBadEventID = errors.New("httprpc: malformed Last-Event-ID")

// parseEventID reads an id made by eventID.
func parseEventID(id string) (num, seq uint64, err error) {
	for i := 0; i < len(id); i++ {
		if id[i] == '-' {
			num, err1 := strconv.ParseUint(id[:i], 10, 64)
			seq, err2 := strconv.ParseUint(id[i+1:], 10, 64)
			if err1 != nil || err2 != nil {
				break
			}
			return num, seq, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: %q", errBadEventID, id)
}
