package httprpc

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/internal/netaddr"
)

// session is one session's state, and the jsonrpc.Conn its Peer runs on:
// Read returns what its POSTs carried, in the order they were posted;
// WriteFor puts each message the Peer sends on the stream of the POST it
// belongs to, or on the standalone stream (number 0).
//
// Everything below is under mu.
type session struct {
	srv      *SessionServer
	id       string
	identity string // Identity's, for the request that started it
	client   string // the key MaxSessionsPerClient counts it by
	remote   string // the RemoteAddr of the request that started it

	mu        sync.Mutex
	peer      *jsonrpc.Peer
	inbox     []*inMsg                   // posted, not read yet
	inBytes   int                        // bytes of the inbox
	inWake    chan struct{}              // 1-buffered: the inbox has grown
	reads     uint64                     // successful Reads: the Peer's ordinals (see jsonrpc.Router)
	byRead    map[uint64]*stream         // streams awaiting the reply to that Read
	byID      map[string]*stream         // by request id: the stream awaiting its reply (read, not cancelled)
	reqCtx    map[string]context.Context // by request id, until its handler starts: the context of the POST that carried it (nil: two did)
	streams   map[uint64]*stream         // streams that can be written or resumed, by number
	next      uint64                     // the number of the next POST stream
	done      []*stream                  // ended streams kept for resumption, oldest first (see retire)
	bytes     int                        // what the events and the kept streams hold (see session_budget.go)
	sentBytes int                        // of which events sent, kept for resumption
	getOpened bool                       // a GET has opened the standalone stream

	droppedUnopened bool          // events of the unopened standalone stream were dropped (logged once)
	gseq            uint64        // events appended so far, all streams: their age
	closed          chan struct{} // closed by end
	cause           error         // why it ended
	busy            int           // requests being served now
	used            bool          // a call came after the request that started it
	room            chan struct{} // closed (and replaced) when unsent events leave or a writer detaches
	active          time.Time     // when the last request ended, or the session began
	idle            *time.Timer   // ends the session once idle; nil without IdleTimeout
}

// inMsg is one posted message waiting to be read.
type inMsg struct {
	data  []byte
	p     posted          // what inspect learnt of it
	ctx   context.Context // the context of the POST that carried it
	st    *stream         // the stream its reply goes on, or nil
	taken chan struct{}   // closed once Read returned it
}

// stream is one event stream: a POST's, up to its reply, or the
// standalone one, which never ends.
type stream struct {
	num       uint64
	read      uint64        // the Read that returned its POST's message (0 before)
	ids       []string      // the requests whose reply it awaits
	cancelled bool          // every request was cancelled: no reply comes (the client closes it)
	gone      bool          // a JSON stream whose client went away: its reply is dropped
	events    []event       // kept, by seq: sent ones (up to sent) for resumption, then unsent ones
	last      uint64        // seq of the last event appended
	sent      uint64        // highest seq written to a response
	ended     bool          // the reply is in: nothing more comes
	kept      bool          // in the session's done list, charged streamOverhead
	bytes     int           // what its events hold (see cost)
	json      bool          // the POST takes JSON: only the reply goes on it
	writer    *attachment   // the response writing it, or nil
	wake      chan struct{} // closed (and replaced) when an event is appended or the writer replaced
}

// event is one message on a stream.
type event struct {
	seq  uint64
	age  uint64 // session-wide order, for eviction
	data []byte
}

// maxDoneStreams bounds the ended streams kept for resumption per session:
// those sent whole, and those whose client left before their reply.
const maxDoneStreams = 64

func newSession(srv *SessionServer, id, identity, client string) *session {
	ss := &session{
		srv:      srv,
		id:       id,
		identity: identity,
		client:   client,
		inWake:   make(chan struct{}, 1),
		byRead:   make(map[uint64]*stream),
		byID:     make(map[string]*stream),
		reqCtx:   make(map[string]context.Context),
		streams:  make(map[uint64]*stream),
		next:     1,
		closed:   make(chan struct{}),
		room:     make(chan struct{}),
		active:   time.Now(),
	}
	ss.streams[0] = &stream{wake: make(chan struct{})}
	if d := ss.idleTimeout(); d > 0 {
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
			ss.took(m)
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
func (ss *session) post(ctx context.Context, data []byte, p posted, st *stream) (*inMsg, error) {
	m := &inMsg{data: data, p: p, ctx: ctx, st: st, taken: make(chan struct{})}
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
// ended, takes only JSON (and msg is not the reply), or read is 0. A reply
// with no stream to go on (its call was cancelled, or its JSON client
// went away) is dropped: the standalone stream carries no responses. The
// standalone stream, while no GET has opened it, keeps at most a quarter
// of MaxBufferedBytes, its oldest events dropped. Past MaxBufferedBytes it
// frees what is kept only for resumption (see makeRoom), then waits while
// a client reads a stream that holds events not taken yet (see waitRoom),
// else it ends the session (ErrSlowClient).
func (ss *session) WriteFor(msg []byte, read uint64) error {
	reply := read != 0 && encodedReply(msg)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cause != nil {
		return net.ErrClosed
	}
	st := ss.streams[0]
	if t := ss.byRead[read]; t != nil && (reply || !t.json) {
		st = t
	} else if reply {
		return nil
	}
	if reply && st.gone { // its JSON client went away
		ss.forget(st)
		return nil
	}
	n := cost(msg)
	if st.num == 0 && !ss.getOpened {
		// For a GET stream nobody has opened: a quarter of the budget at
		// most, the oldest dropped (see dropUnopened).
		if max := limitOr(ss.srv.MaxBufferedBytes, DefaultMaxBufferedBytes); max >= 0 {
			ss.dropUnopened(max/4 - n)
		}
	}
	room := n
	if reply && st.writer == nil && !st.kept {
		room += streamOverhead // kept once its reply is in (see retire)
	}
	if err := ss.waitRoom(room); err != nil {
		return err
	}
	if reply {
		delete(ss.byRead, read)
		ss.endStream(st)
	}
	ss.gseq++
	st.last++
	st.events = append(st.events, event{seq: st.last, age: ss.gseq, data: append([]byte(nil), msg...)})
	st.bytes += n
	ss.bytes += n
	if reply && st.writer == nil {
		ss.retire(st) // its client left before the reply: kept for a resumption
	}
	st.signal()
	return nil
}

// signal wakes the stream's writer. Called with mu held.
func (st *stream) signal() {
	close(st.wake)
	st.wake = make(chan struct{})
}

// newStream starts a POST's stream. Called with mu held.
func (ss *session) newStream(jsonOnly bool) *stream {
	st := &stream{num: ss.next, json: jsonOnly, wake: make(chan struct{})}
	ss.next++
	ss.streams[st.num] = st
	return st
}

// Close ends the session: its Peer calls it when it ends.
// RemoteAddr returns the address of the client of the request that
// started the session, for jsonrpc.RemoteAddresser (a session's later
// requests may come on other connections); nil when it is not an IP
// address and port.
func (ss *session) RemoteAddr() net.Addr { return netaddr.Parse(ss.remote) }

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
