package topic

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/peerwire/jsonrpc"
)

// A Follower is the client side of topics: it follows topics over a
// connection that may drop and come back, and hands the application every
// message exactly once and in seq order per topic, plus a reset when the
// server could not recover what was missed.
//
// It keeps each topic's position, and subscribes with it (since) on every
// new connection: call Resubscribe from ws.ClientOptions.OnConnect. It
// drops duplicates (a seq already seen), holds messages that arrive while
// a subscribe is in flight until its reply is applied, and subscribes
// again when it sees a gap (a seq beyond the next one) or another epoch
// (then without since, and OnReset follows). Register its topic.message
// handler on the connection's Mux.
//
//	f := &topic.Follower{OnMessage: apply, OnReset: refetch}
//	mux := jsonrpc.NewMux()
//	f.Register(mux)
//	c := ws.NewClient(url, ws.ClientOptions{Dial: ws.DialOptions{Peer: jsonrpc.Options{Handler: mux}}, OnConnect: f.Resubscribe})
//	p, err := c.Peer(ctx)
//	err = f.Subscribe(ctx, p, "board")
//
// OnMessage and OnReset are called one at a time, from the goroutine of a
// Subscribe or Resubscribe or of the connection's notification handler;
// they must not call Subscribe or Resubscribe (which would wait for them),
// and while one runs the Follower's other topics and a Resubscribe wait.
// The zero value follows nothing and drops every message; set the fields
// before first use. A Follower is safe for concurrent use.
type Follower struct {
	// OnMessage, if set, is called with every message of a followed
	// topic, once, in seq order.
	OnMessage func(Message)

	// OnReset, if set, is called when a topic's messages since its
	// position could not be recovered (another epoch, or history that no
	// longer reaches back), and on the first subscribe to a topic: the
	// application fetches its state then. at is the position the topic
	// goes on from: the messages after it follow through OnMessage.
	OnReset func(topic string, at Position)

	// MaxBuffered bounds the messages of a topic held while a subscribe
	// is in flight; beyond it they are dropped and the topic subscribes
	// again once the reply is in, recovering them from the history.
	// Default: 4096; negative: no bound.
	MaxBuffered int

	deliver sync.Mutex // held while computing and making the calls above, in order
	mu      sync.Mutex // guards topics
	topics  map[string]*followed
}

// followed is the state of one followed topic.
type followed struct {
	pos      Position      // Epoch "" until the first reply
	peer     *jsonrpc.Peer // the connection subscribed on
	inflight int           // subscribe calls in flight on peer
	buf      []Message     // live messages on peer while inflight > 0
	lost     bool          // buf overflowed: subscribe again after the reply
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
)

// maxRounds bounds the subscribes one call makes in a row, each one asked
// for by the reply of the one before (a gap, an overflow).
const maxRounds = 16

// Register registers the Follower's topic.message handler on m.
func (f *Follower) Register(m *jsonrpc.Mux) {
	jsonrpc.RegisterNotification(m, MethodMessage, f.message)
}

// Position returns the position of a followed topic: the last message
// handed to OnMessage (or the position OnReset was given). ok is false for
// a topic not followed or not yet subscribed.
func (f *Follower) Position(topic string) (pos Position, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.topics[topic]
	if t == nil || t.pos.Epoch == "" {
		return Position{}, false
	}
	return t.pos, true
}

// Subscribe follows topic on p: it calls topic.subscribe (with the
// position, if the topic was followed before) and applies the reply. The
// topic stays followed, and Resubscribe subscribes it again on every new
// connection, even when this call fails, until Unsubscribe.
func (f *Follower) Subscribe(ctx context.Context, p *jsonrpc.Peer, topic string) error {
	f.mu.Lock()
	if f.topics == nil {
		f.topics = make(map[string]*followed)
	}
	if f.topics[topic] == nil {
		f.topics[topic] = &followed{}
	}
	f.mu.Unlock()
	return f.subscribe(ctx, p, topic, withSince)
}

// Resubscribe subscribes every followed topic on p, each with its
// position: the OnConnect of a ws.Client (ws.ClientOptions.OnConnect). It
// returns the errors of those that failed, joined; as an OnConnect, an
// error drops the connection and the Client tries again.
func (f *Follower) Resubscribe(ctx context.Context, p *jsonrpc.Peer) error {
	f.mu.Lock()
	names := make([]string, 0, len(f.topics))
	for name := range f.topics {
		names = append(names, name)
	}
	f.mu.Unlock()
	var errs []error
	for _, name := range names {
		if err := f.subscribe(ctx, p, name, withSince); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Unsubscribe stops following topic and, if p is not nil, calls
// topic.unsubscribe on it.
func (f *Follower) Unsubscribe(ctx context.Context, p *jsonrpc.Peer, topic string) error {
	f.mu.Lock()
	delete(f.topics, topic)
	f.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Call(ctx, MethodUnsubscribe, UnsubscribeParams{Topic: topic}, nil)
}

// subscribe runs subscribe rounds on p until a reply asks for no other.
func (f *Follower) subscribe(ctx context.Context, p *jsonrpc.Peer, name string, how again) error {
	for round := 0; how != done; round++ {
		if round == maxRounds {
			return fmt.Errorf("topic: %q: gave up after %d subscribes in a row that each found a gap", name, round)
		}
		f.mu.Lock()
		t := f.topics[name]
		if t == nil { // unsubscribed meanwhile
			f.mu.Unlock()
			return nil
		}
		since := t.begin(p, how)
		f.mu.Unlock()
		var res SubscribeResult
		err := p.Call(ctx, MethodSubscribe, SubscribeParams{Topic: name, Since: since}, &res)
		if how, err = f.finish(p, name, res, err); err != nil {
			return err
		}
	}
	return nil
}

// begin marks a subscribe of t on p in flight and returns its since
// (f.mu held).
func (t *followed) begin(p *jsonrpc.Peer, how again) *Position {
	if t.peer != p { // a new connection: what the old one buffered is in the history
		t.peer, t.inflight, t.buf, t.lost = p, 0, nil, false
	}
	t.inflight++
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
// subscribe again.
func (f *Follower) finish(p *jsonrpc.Peer, name string, res SubscribeResult, callErr error) (again, error) {
	f.deliver.Lock()
	defer f.deliver.Unlock()
	f.mu.Lock()
	t := f.topics[name]
	if t == nil { // unsubscribed meanwhile
		f.mu.Unlock()
		return done, callErr
	}
	mine := t.peer == p
	if mine {
		t.inflight--
	}
	if callErr != nil {
		if mine && t.inflight == 0 {
			t.buf, t.lost = nil, false // the next subscribe recovers them
		}
		f.mu.Unlock()
		return done, fmt.Errorf("topic: failed to subscribe to %q: %w", name, callErr)
	}
	evs := t.apply(name, res)
	how := done
	if mine && t.inflight == 0 {
		buf, lost := t.buf, t.lost
		t.buf, t.lost = nil, false
		for _, m := range buf {
			if how = t.take(m, &evs); how != done {
				break // the rest is in the history
			}
		}
		if how == done && lost {
			how = withSince
		}
	}
	f.mu.Unlock()
	f.emit(evs)
	return how, nil
}

// apply applies a subscribe reply to t's position.
func (t *followed) apply(name string, res SubscribeResult) []event {
	if !res.Recovered || res.Epoch != t.pos.Epoch {
		t.pos = Position{Epoch: res.Epoch, Seq: res.Seq}
		return []event{{reset: true, msg: Message{Topic: name}, at: t.pos}}
	}
	var evs []event
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
// evs if it is the next one, and says whether to subscribe again.
func (t *followed) take(m Message, evs *[]event) again {
	switch {
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
	return f.subscribe(ctx, p, m.Topic, how)
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
