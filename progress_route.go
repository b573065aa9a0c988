package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// progressSink holds the progress of one of our calls that its caller's
// functions have yet to see. The read loop appends to it (never waiting)
// and the caller, waiting in Call, takes what it holds and runs its
// functions on its own goroutine: so the read loop runs no user code, and
// what arrived before the reply is seen before Call returns.
type progressSink struct {
	fs            progressFuncs
	work, partial ID // the call's tokens; the zero ID for a kind not asked for

	q     []progressItem // under the pending table's mu
	ready chan struct{}  // has a value while q may be non-empty
}

// progressItem is one progress notification's value, as it came.
type progressItem struct {
	value   json.RawMessage
	partial bool
	size    int // what it is charged against the budget
}

// progressOverhead is what a progress value costs beyond its bytes.
const progressOverhead = 64

// newSink returns the sink of a call made with ctx, with fresh tokens, or
// nil when ctx asks for no progress. It fails when ctx asks for progress
// and the Peer has no dialect to ask in.
func (p *Peer) newSink(ctx context.Context) (*progressSink, error) {
	fs, ok := p.progressOf(ctx)
	if !ok {
		return nil, nil
	}
	if p.opts.Progress == nil {
		return nil, ErrNoProgressDialect
	}
	s := &progressSink{fs: fs, ready: make(chan struct{}, 1)}
	if fs.work != nil {
		s.work = p.newToken()
	}
	if fs.partial != nil {
		s.partial = p.newToken()
	}
	return s, nil
}

// Outcomes of pendingTable.progress.
const (
	progressQueued   = iota // for its caller
	progressLate            // for a token of ours no longer awaited
	progressForeign         // for a token this Peer did not make
	progressOverflow        // over the budget: its call failed
)

// addTokens registers s's tokens. Called with t.mu held.
func (t *pendingTable) addTokens(s *progressSink) {
	if t.tokens == nil {
		t.tokens = make(map[ID]*progressSink)
	}
	for _, tok := range []ID{s.work, s.partial} {
		if !tok.IsZero() {
			t.tokens[tok] = s
		}
	}
}

// dropTokens unregisters s's tokens: no more progress is queued for it.
// Called with t.mu held.
func (t *pendingTable) dropTokens(s *progressSink) {
	delete(t.tokens, s.work)
	delete(t.tokens, s.partial)
}

// discard drops what s holds, for a caller that will not take it.
// Called with t.mu held.
func (t *pendingTable) discard(s *progressSink) {
	for _, it := range s.q {
		t.progBytes -= it.size
	}
	s.q = nil
}

// progress queues value for the call whose token is token, and says what
// became of it. When it would take the progress held for every call over
// the budget (a value larger than the budget is taken when nothing else is
// held), the call fails at once with an error wrapping ErrOverloaded, and
// failed is its id, for the caller to cancel.
func (t *pendingTable) progress(token ID, value json.RawMessage) (outcome int, failed ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.tokens[token]
	switch {
	case s == nil && t.ownToken(token):
		return progressLate, ID{}
	case s == nil:
		return progressForeign, ID{}
	}
	size := len(value) + progressOverhead
	if t.progBytes > 0 && t.progBytes+size > t.progMax {
		for id, w := range t.calls {
			if w.sink == s {
				// The caller is told at once, and what it holds is
				// dropped: the call has failed. Its reply, when it
				// comes, is a late one.
				t.forgetLocked(id)
				w.outcome(&response{ID: id, invalid: fmt.Errorf(
					"%w: progress for this call over the budget of %d bytes waits for its function", ErrOverloaded, t.progMax)})
				return progressOverflow, id
			}
		}
	}
	// A copy: the value is a slice of its notification, which would stay
	// alive whole while the value waits, charged only the value's size.
	s.q = append(s.q, progressItem{value: bytes.Clone(value), partial: token == s.partial && token != s.work, size: size})
	t.progBytes += size
	select {
	case s.ready <- struct{}{}:
	default: // signalled already
	}
	return progressQueued, ID{}
}

// take returns what s holds, in arrival order, and empties it.
func (t *pendingTable) take(s *progressSink) []progressItem {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := s.q
	s.q = nil
	return q
}

// release gives back the budget of a progress value its function has seen.
func (t *pendingTable) release(size int) {
	t.mu.Lock()
	t.progBytes -= size
	t.mu.Unlock()
}

// runProgress runs the caller's functions on what s holds, in order, on
// the calling goroutine.
func (p *Peer) runProgress(s *progressSink) {
	for {
		q := p.pending.take(s)
		if len(q) == 0 {
			return
		}
		for _, it := range q {
			if it.partial {
				s.fs.partial(it.value)
			} else {
				s.fs.work(it.value)
			}
			p.pending.release(it.size)
		}
	}
}

// routeProgress takes a progress notification in the read loop: one for a
// call of ours goes to that call, one for a token of ours no longer
// awaited is dropped. It returns false for one this Peer did not ask for
// (a token the other side made, as LSP's server-initiated progress does,
// or params naming none), which goes to the Handler as any notification.
func (p *Peer) routeProgress(params json.RawMessage) bool {
	token, value, ok := p.opts.Progress.Parse(params)
	if !ok {
		return false
	}
	switch outcome, id := p.pending.progress(token, value); outcome {
	case progressForeign:
		return false
	case progressLate:
		p.log.Debug("jsonrpc: dropped progress for a call no longer awaited", "token", token.raw)
	case progressOverflow:
		p.log.Info("jsonrpc: a call's progress went over its budget; the call failed", "id", id.raw, "budget", p.opts.MaxQueuedBytes)
		p.sendCancel(context.Background(), id)
	}
	return true
}

// progressHeld returns the bytes of progress queued for callers.
func (t *pendingTable) progressHeld() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.progBytes
}
