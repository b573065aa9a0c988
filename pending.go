package jsonrpc

import (
	"sync"
)

// pendingTable maps the ids of our outgoing calls to the callers waiting for
// their replies. A call is removed from the map under the same lock that
// delivers to it, so each call gets exactly one outcome: its reply, its
// cancellation, or the end of the connection.
type pendingTable struct {
	max    int // calls pending at once; 0 is no limit
	mu     sync.Mutex
	calls  map[ID]chan *response
	closed error // non-nil once the connection has ended

	// The ids of calls whose callers stopped waiting, the last
	// maxForgotten of them: a reply to one is expected (the other side
	// answers a cancelled call with -32800), not a stray.
	forgotten     map[ID]struct{}
	forgottenLog  []ID // a ring, in the order forgotten
	forgottenNext int  // the oldest in forgottenLog, once it is full
}

// maxForgotten bounds the forgotten ids kept.
const maxForgotten = 1024

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

// add registers a call and returns the channel its outcome arrives on: the
// reply, or nil when the connection ended (err then says why). add fails
// with that error once the table is closed, and with ErrTooManyPending
// while max calls are pending.
func (t *pendingTable) add(id ID) (chan *response, error) {
	ch := replyChans.Get().(chan *response)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed != nil {
		return nil, t.closed
	}
	if t.max > 0 && len(t.calls) >= t.max {
		return nil, ErrTooManyPending
	}
	if t.calls == nil {
		t.calls = make(map[ID]chan *response)
	}
	t.calls[id] = ch
	return ch, nil
}

// replyChans recycles the channels calls wait on: one is used for one
// outcome, so once that outcome has been received, or once forget has taken
// the call out before any outcome, nothing will send on it again.
var replyChans = sync.Pool{New: func() any { return make(chan *response, 1) }}

// release gives back a call's channel once it is known to be empty for
// good: its one outcome was received, or forget reported it never came.
func (t *pendingTable) release(ch chan *response) { replyChans.Put(ch) }

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
	ch, ok := t.calls[r.ID]
	if ok {
		delete(t.calls, r.ID)
		ch <- r // buffered and used once: never blocks
		return replyDelivered
	}
	if _, ok := t.forgotten[r.ID]; ok {
		delete(t.forgotten, r.ID)
		return replyLate
	}
	return replyStray
}

// forget removes a call whose caller stopped waiting. It reports whether the
// call was still pending, that is whether no outcome has been delivered.
func (t *pendingTable) forget(id ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.calls[id]
	if !ok {
		return false
	}
	delete(t.calls, id)
	if t.forgotten == nil {
		t.forgotten = make(map[ID]struct{})
	}
	t.forgotten[id] = struct{}{}
	if len(t.forgottenLog) < maxForgotten {
		t.forgottenLog = append(t.forgottenLog, id)
		return true
	}
	delete(t.forgotten, t.forgottenLog[t.forgottenNext])
	t.forgottenLog[t.forgottenNext] = id
	t.forgottenNext = (t.forgottenNext + 1) % maxForgotten
	return true
}

// close fails every pending call with err and makes later adds fail with it.
func (t *pendingTable) close(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed != nil {
		return
	}
	t.closed = err
	for id, ch := range t.calls {
		ch <- nil // nil tells the caller to read the table's err
		delete(t.calls, id)
	}
}
