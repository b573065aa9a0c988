package topic

import (
	"context"
	"errors"
	"fmt"

	"github.com/peerwire/jsonrpc"
)

// followed is the state of one followed topic.
type followed struct {
	pos      Position        // Epoch "" until the first reply
	peer     *jsonrpc.Peer   // the connection subscribed on
	prev     *jsonrpc.Peer   // the one before, while a subscribe on peer has not succeeded
	inflight int             // subscribe calls in flight on peer (a paged catch-up counts once)
	buf      []Message       // live messages on peer while inflight > 0
	lost     bool            // buf overflowed: subscribe again after the reply
	present  map[string]bool // who OnPresence was told is present (follower_presence.go)
	presVer  uint64          // the version of the last change it was told
	asking   bool            // Resubscribe has yet to ask who came and went (presenceAgain)
}

// event is one call to make to the application.
type event struct {
	msg   Message
	reset bool // OnReset(msg.Topic, at), not OnMessage
	at    Position
}

// again says whether to subscribe again after applying, and with since.
type again int

const (
	done        again = iota
	withSince         // a gap: the messages after pos are in the history
	fromScratch       // another epoch: the history is gone
	undoKicked        // kicked while in flight, and it succeeded: unsubscribe
)

// kickedIn is a topic kicked (topic.kicked) while n subscribes of it were
// in flight on peer: the server may have taken one of them after the kick
// (Kick does not refuse a later subscribe), so each that succeeds is
// followed by topic.unsubscribe, as Unsubscribe does, and the connection
// keeps nothing the Follower no longer follows.
type kickedIn struct {
	peer *jsonrpc.Peer
	n    int
}

// subscribe runs subscribe rounds on p until a reply asks for no other.
func (f *Follower) subscribe(ctx context.Context, p *jsonrpc.Peer, name string, how again) error {
	page := false // the last reply said more: its round is carried on
	for round := 0; how != done; {
		if round == maxRounds {
			return fmt.Errorf("topic: %q: gave up after %d subscribes in a row that each found a gap", name, round)
		}
		f.mu.Lock()
		t := f.topics[name]
		if t == nil { // unsubscribed meanwhile
			f.mu.Unlock()
			return nil
		}
		before := t.pos
		since := t.begin(p, how, page)
		f.mu.Unlock()
		var res SubscribeResult
		err := p.Call(ctx, MethodSubscribe, SubscribeParams{Topic: name, Since: since, History: max(f.History, 0)}, &res)
		var moved bool
		if how, page, moved, err = f.finish(p, name, before, res, err); err != nil {
			return err
		}
		if how == undoKicked {
			return f.undoKicked(ctx, p, name)
		}
		if !page || !moved {
			round++
		}
	}
	return nil
}

// undoKicked sends topic.unsubscribe for a subscribe of name on p that
// succeeded after name was kicked, unless name is followed again by then
// (its Subscribe's subscribe holds).
func (f *Follower) undoKicked(ctx context.Context, p *jsonrpc.Peer, name string) error {
	f.mu.Lock()
	if err := f.awaitLeaving(ctx, name); err != nil {
		return fmt.Errorf("topic: failed to leave %q, kicked while subscribing: %w", name, err)
	}
	if f.topics[name] != nil {
		f.mu.Unlock()
		return nil
	}
	if err := f.leave(ctx, p, name); err != nil {
		return fmt.Errorf("topic: failed to leave %q, kicked while subscribing: %w", name, err)
	}
	return nil
}

// begin marks a subscribe of t on p in flight and returns its since
// (f.mu held). page: the one before on p said more, and is carried on.
func (t *followed) begin(p *jsonrpc.Peer, how again, page bool) *Position {
	if t.peer != p { // a new connection: what the old one buffered is in the history
		t.prev = t.peer
		t.peer, t.inflight, t.buf, t.lost = p, 0, nil, false
		page = false
	}
	if !page {
		t.inflight++
	}
	if how == fromScratch {
		t.pos = Position{}
	}
	if t.pos.Epoch == "" {
		return nil
	}
	since := t.pos
	return &since
}

// finish applies the reply of a subscribe of name on p, then what was
// buffered meanwhile, if it was the last one in flight, and says whether to
// subscribe again, whether that is the next page of this one (page), and
// whether the topic's position moved from before.
func (f *Follower) finish(p *jsonrpc.Peer, name string, before Position, res SubscribeResult, callErr error) (how again, page, moved bool, err error) {
	f.deliver.Lock()
	defer f.deliver.Unlock()
	f.mu.Lock()
	t := f.topics[name]
	if t == nil { // unsubscribed, or kicked, meanwhile
		how = done
		if k, ok := f.kickedIn[name]; ok && k.peer == p {
			if k.n--; k.n > 0 {
				f.kickedIn[name] = k
			} else {
				delete(f.kickedIn, name)
			}
			switch {
			case callErr == nil:
				how = undoKicked
			case refusal(callErr):
				callErr = nil // the server refused it for the kick, which OnError had
			}
		}
		f.mu.Unlock()
		return how, false, false, callErr
	}
	mine := t.peer == p
	if callErr != nil {
		if mine {
			t.failed(p, callErr)
		}
		if refusal(callErr) {
			delete(f.topics, name)
		}
		f.mu.Unlock()
		return done, false, false, fmt.Errorf("topic: failed to subscribe to %q: %w", name, callErr)
	}
	t.prev = nil
	evs := t.apply(name, res, f.History > 0)
	moved = t.pos != before
	how = done
	switch {
	case mine && res.More && res.Recovered:
		how, page = withSince, true // inflight and buf carry over to the next page
	case mine:
		t.inflight--
		if t.inflight == 0 {
			how = t.drain(&evs)
		}
	}
	f.mu.Unlock()
	f.emit(evs)
	return how, page, moved, nil
}

// failed undoes what a subscribe on p that failed with err had begun.
func (t *followed) failed(p *jsonrpc.Peer, err error) {
	t.inflight = max(t.inflight-1, 0)
	if t.inflight > 0 {
		return
	}
	t.buf, t.lost = nil, false // the next subscribe recovers them
	if errors.Is(err, jsonrpc.ErrClosed) && t.prev != nil && !ended(t.prev) {
		t.peer, t.prev = t.prev, nil // p ended: the topic is still on the one before
	}
}

// drain applies what was buffered while subscribes were in flight, and
// says whether to subscribe again.
func (t *followed) drain(evs *[]event) again {
	buf, lost := t.buf, t.lost
	t.buf, t.lost = nil, false
	for _, m := range buf {
		if how := t.take(m, evs); how != done {
			return how // the rest is in the history
		}
	}
	if lost {
		return withSince
	}
	return done
}

// apply applies a subscribe reply to t's position; backlog: a reply not
// recovered carries the backlog asked for (Follower.History), applied
// after the reset, from the position before its first message.
func (t *followed) apply(name string, res SubscribeResult, backlog bool) []event {
	var evs []event
	if !res.Recovered || res.Epoch != t.pos.Epoch {
		t.pos = Position{Epoch: res.Epoch, Seq: res.Seq}
		if !backlog || res.Recovered || len(res.Messages) == 0 || res.Messages[0].Seq == 0 || res.Messages[0].Seq > res.Seq {
			return []event{{reset: true, msg: Message{Topic: name}, at: t.pos}}
		}
		t.pos.Seq = res.Messages[0].Seq - 1
		evs = append(evs, event{reset: true, msg: Message{Topic: name}, at: t.pos})
	}
	for _, e := range res.Messages {
		if e.Seq == t.pos.Seq+1 {
			t.pos.Seq = e.Seq
			evs = append(evs, event{msg: Message{Topic: name, Epoch: res.Epoch, Seq: e.Seq, Data: e.Data}})
		}
	}
	t.pos.Seq = max(t.pos.Seq, res.Seq)
	return evs
}

// take applies one live message to t's position, adding the message to
// evs if it is the next one, and says whether to subscribe again. The
// first message of another epoch (seq 1) is the next one when t has seen
// no message of its own (seq 0): nothing came before it in either epoch.
// So a topic that had no history (the JetStream store's epoch "none",
// until a publish makes its stream) goes on with its first message
// (TestFollowerFirstMessageAfterEmptyTopic).
func (t *followed) take(m Message, evs *[]event) again {
	switch {
	case m.Epoch != t.pos.Epoch && t.pos.Seq == 0 && m.Seq == 1:
		t.pos = Position{Epoch: m.Epoch, Seq: 1}
		*evs = append(*evs, event{msg: m})
		return done
	case m.Epoch != t.pos.Epoch:
		return fromScratch
	case m.Seq <= t.pos.Seq: // a duplicate
		return done
	case m.Seq == t.pos.Seq+1:
		t.pos.Seq = m.Seq
		*evs = append(*evs, event{msg: m})
		return done
	default:
		return withSince
	}
}

// message handles a live topic.message.
func (f *Follower) message(ctx context.Context, m Message) error {
	p := jsonrpc.PeerFromContext(ctx)
	f.deliver.Lock()
	f.mu.Lock()
	t := f.topics[m.Topic]
	if t == nil || t.peer != p { // not followed, or from an old connection
		f.mu.Unlock()
		f.deliver.Unlock()
		return nil
	}
	if t.inflight > 0 {
		if limit := f.maxBuffered(); limit < 0 || len(t.buf) < limit {
			t.buf = append(t.buf, m)
		} else {
			t.buf, t.lost = nil, true
		}
		f.mu.Unlock()
		f.deliver.Unlock()
		return nil
	}
	var evs []event
	how := t.take(m, &evs)
	f.mu.Unlock()
	f.emit(evs)
	f.deliver.Unlock()
	if how == done {
		return nil
	}
	// A gap or another epoch on this connection: subscribe again, here,
	// so that the messages behind this one wait for the reply in order.
	err := f.subscribe(ctx, p, m.Topic, how)
	if err != nil && f.refusedBy(m.Topic, err) {
		return nil
	}
	return err
}

func (f *Follower) maxBuffered() int {
	if f.MaxBuffered == 0 {
		return 4096
	}
	return f.MaxBuffered
}

// emit makes the application's calls (f.deliver held).
func (f *Follower) emit(evs []event) {
	for _, e := range evs {
		switch {
		case e.reset && f.OnReset != nil:
			f.OnReset(e.msg.Topic, e.at)
		case !e.reset && f.OnMessage != nil:
			f.OnMessage(e.msg)
		}
	}
}
