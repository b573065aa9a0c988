package jsonrpc

import (
	"bytes"
	"sync"
)

// pendingTable maps the ids of our outgoing calls to the callers waiting for
// their replies. A call is removed from the map under the same lock that
// delivers to it, so each call gets exactly one outcome: its reply, its
// cancellation, or the end of the connection.
type pendingTable struct {
	max    int // calls pending at once; 0 is no limit
	mu     sync.Mutex
	calls  map[ID]waiter
	closed error // non-nil once the connection has ended

	// The ids of calls whose callers stopped waiting, the last
	// maxForgotten of them: a reply to one is expected (the other side
	// answers a cancelled call with -32800), not a stray.
	forgotten     map[ID]struct{}
	forgottenLog  []ID // a ring, in the order forgotten
	forgottenNext int  // the oldest in forgottenLog, once it is full

	// synced is the seq (see sendQueue) of the latest message of ours
	// that the remote side has answered: it has read everything we
	// wrote up to there (see deliverUnattributed).
	synced uint64

	// Progress (progress_route.go): the calls' tokens, the bytes of
	// progress queued for callers' functions, bounded by progMax, and
	// the prefix of the tokens this Peer makes.
	tokens    map[ID]*progressSink
	progBytes int
	progMax   int
	tokPrefix string
}

// maxForgotten bounds the forgotten ids kept.
const maxForgotten = 1024

// waiter is who waits for a pending id: a call, on its channel, or an
// element of a batch, in its group.
type waiter struct {
	ch chan response // gets a copy of the reply; closed when the connection ends
	g  *replyGroup
	i  int // the element's index in g

	sink *progressSink // a call's progress, or nil
	seq  uint64        // a call's message's seq once queued (see sendQueue); 0 before
}

// replyGroup collects the replies to the calls of one batch. They are
// handed over together, by closing done once the last is in, rather than
// by a channel hand-off each.
type replyGroup struct {
	resps []*response // by element; nil for a notification, or once the connection ended
	left  int         // calls not yet answered, under the table's mu
	done  chan struct{}
	seq   uint64 // the batch's message's seq once queued; under the table's mu
}

// put records element i's outcome. Called with the table's mu held. A
// result waits here for the batch's last reply, so it is copied out of
// the message it came in, which would otherwise stay alive whole (a
// remote side can pad a reply of 1 to any length).
func (g *replyGroup) put(i int, r *response) {
	if r != nil && r.reused {
		c := *r // the decoder's own, which its next message overwrites
		c.reused = false
		r = &c
	}
	if r != nil && r.Result != nil {
		r.Result = bytes.Clone(r.Result)
	}
	g.resps[i] = r
	if g.left--; g.left == 0 {
		close(g.done)
	}
}

// outcome hands r to w, or tells w that the connection ended (r nil).
// Called with the table's mu held.
func (w waiter) outcome(r *response) {
	if w.g != nil {
		w.g.put(w.i, r)
		return
	}
	if r == nil {
		close(w.ch)
		return
	}
	c := *r
	c.reused = false
	w.ch <- c // buffered and used once: never blocks
}

// err returns the error that closed the table, or nil while it is open.
func (t *pendingTable) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// len returns the number of calls waiting for replies.
func (t *pendingTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.calls)
}

// add registers a call and returns the channel its outcome arrives on: a
// copy of the reply, or the channel's close when the connection ended (err
// then says why). add fails
// with that error once the table is closed, and with ErrTooManyPending
// while max calls are pending.
func (t *pendingTable) add(id ID, s *progressSink) (chan response, error) {
	// A channel of its own, not a pooled one: a channel belongs to the
	// testing/synctest bubble that made it, and one reused outside it (a
	// Peer in the next test) is a fatal error.
	ch := make(chan response, 1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed != nil {
		return nil, t.closed
	}
	if t.max > 0 && len(t.calls) >= t.max {
		return nil, ErrTooManyPending
	}
	if t.calls == nil {
		t.calls = make(map[ID]waiter)
	}
	t.calls[id] = waiter{ch: ch, sink: s}
	if s != nil {
		t.addTokens(s)
	}
	return ch, nil
}

// addGroup registers the calls of a batch, ids[i] being element i's id (the
// zero ID for a notification), and returns the group their replies arrive
// in; a nil reply means the connection ended (err says why). It fails, with
// none of them registered, as add does: once the table is closed, or when
// they would take it over max.
func (t *pendingTable) addGroup(ids []ID) (*replyGroup, error) {
	g := &replyGroup{resps: make([]*response, len(ids)), done: make(chan struct{})}
	for _, id := range ids {
		if !id.IsZero() {
			g.left++
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed != nil {
		return nil, t.closed
	}
	if t.max > 0 && len(t.calls)+g.left > t.max {
		return nil, ErrTooManyPending
	}
	if t.calls == nil {
		t.calls = make(map[ID]waiter)
	}
	for i, id := range ids {
		if !id.IsZero() {
			t.calls[id] = waiter{g: g, i: i}
		}
	}
	if g.left == 0 {
		close(g.done)
	}
	return g, nil
}

// sent records seq, the place in the order of messages of the message o,
// for the pending calls o carries. The send queue calls it as it queues o,
// with its own mu held, before o can be written.
func (t *pendingTable) sent(o *outgoing, seq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o.group != nil {
		o.group.seq = seq
	}
	set := func(id ID) {
		if w, ok := t.calls[id]; ok && w.g == nil {
			w.seq = seq
			t.calls[id] = w
		}
	}
	if !o.id.IsZero() {
		set(o.id)
	}
	for _, id := range o.ids {
		if !id.IsZero() {
			set(id)
		}
	}
}

// Outcomes of deliver.
const (
	replyDelivered = iota // to the call waiting for it
	replyLate             // to a call whose caller had stopped waiting
	replyStray            // to no call this side knows: never sent, or answered
)

// deliver hands a reply to the call waiting for its id, and says whom it
// reached.
func (t *pendingTable) deliver(r *response) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.calls[r.ID]
	if ok {
		seq := w.seq
		if w.g != nil {
			seq = w.g.seq
		}
		t.synced = max(t.synced, seq)
		t.settle(r.ID, w, r)
		return replyDelivered
	}
	if _, ok := t.forgotten[r.ID]; ok {
		delete(t.forgotten, r.ID)
		return replyLate
	}
	return replyStray
}

// deliverUnattributed hands r, a reply with id null (the remote side could
// not read the id of a message of ours), to the calls waiting if it can be
// the answer to their message and to no other: every call waiting went
// out in one message (one call, or the calls of one batch), the message
// last queued (seq last), right after one the remote side has answered
// (synced). It returns how many it reached.
//
// The remote side reads our messages in order, and answers one it cannot
// read as it reads it, before it answers any later one; so once it has
// answered a message, it has said all it will say of the ones before. But
// any message after that, a notification or a reply of ours included, may
// draw an error with id null (a notification too large, say), and nothing
// tells that error from the call's: when there is any, r names none of
// them, and is dropped.
func (t *pendingTable) deliverUnattributed(r *response, last uint64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var seq uint64
	for _, w := range t.calls {
		s := w.seq
		if w.g != nil {
			s = w.g.seq
		}
		if s == 0 || seq != 0 && s != seq {
			return 0 // not numbered (not queued), or from several messages
		}
		seq = s
	}
	if seq == 0 || seq != last || t.synced != seq-1 {
		return 0
	}
	n := len(t.calls)
	for id, w := range t.calls {
		t.settle(id, w, r)
	}
	return n
}

// forget removes a call whose caller stopped waiting. It reports whether the
// call was still pending, that is whether no outcome has been delivered.
func (t *pendingTable) forget(id ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.calls[id]; !ok {
		return false
	}
	t.forgetLocked(id)
	return true
}

// forgetGroup forgets the calls of g that are still pending, ids being
// those addGroup was given, and returns their ids. The outcomes in g are
// settled from then on.
func (t *pendingTable) forgetGroup(g *replyGroup, ids []ID) []ID {
	t.mu.Lock()
	defer t.mu.Unlock()
	var left []ID
	for _, id := range ids {
		if w, ok := t.calls[id]; ok && w.g == g {
			t.forgetLocked(id)
			left = append(left, id)
		}
	}
	return left
}

// settle removes the pending call id, waited for by w, and hands it its
// outcome r. No more progress is queued for it; what is queued stays for
// its caller, who runs it before returning. Called with t.mu held.
func (t *pendingTable) settle(id ID, w waiter, r *response) {
	delete(t.calls, id)
	if w.sink != nil {
		t.dropTokens(w.sink)
	}
	w.outcome(r)
}

// forgetLocked removes a pending call and remembers its id as forgotten.
// Its progress is dropped: its caller has gone. Called with t.mu held.
func (t *pendingTable) forgetLocked(id ID) {
	if w := t.calls[id]; w.sink != nil {
		t.dropTokens(w.sink)
		t.discard(w.sink)
	}
	delete(t.calls, id)
	if t.forgotten == nil {
		t.forgotten = make(map[ID]struct{})
	}
	t.forgotten[id] = struct{}{}
	if len(t.forgottenLog) < maxForgotten {
		t.forgottenLog = append(t.forgottenLog, id)
		return
	}
	delete(t.forgotten, t.forgottenLog[t.forgottenNext])
	t.forgottenLog[t.forgottenNext] = id
	t.forgottenNext = (t.forgottenNext + 1) % maxForgotten
}

// close fails every pending call with err and makes later adds fail with it.
func (t *pendingTable) close(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed != nil {
		return
	}
	t.closed = err
	for id, w := range t.calls {
		t.settle(id, w, nil) // nil tells the caller to read the table's err
	}
}
