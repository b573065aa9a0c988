package topic

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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
// a subscribe is in flight until its reply is applied, asks for the next
// page while a reply says more, and subscribes again when it sees a gap (a
// seq beyond the next one) or another epoch (then without since, and
// OnReset follows), except that a topic that has had no message (seq 0)
// goes on with the first message of another epoch (seq 1): nothing came
// before it (TestFollowerFirstMessageAfterEmptyTopic). Register its
// topic.message handler on the connection's Mux.
//
//	f := &topic.Follower{OnMessage: apply, OnReset: refetch}
//	mux := jsonrpc.NewMux()
//	f.Register(mux)
//	c := ws.NewClient(url, ws.ClientOptions{Peer: jsonrpc.Options{Handler: mux}, OnConnect: f.Resubscribe})
//	p, err := c.Peer(ctx)
//	err = f.Subscribe(ctx, p, "board")
//
// A topic the server refuses (any error reply but the transient -32603,
// -32000 and -32003) is no longer followed: Subscribe returns the refusal,
// and a refusal of a subscribe the Follower makes by itself (Resubscribe,
// a gap) goes to OnError and does not fail Resubscribe, so that one
// refused topic never keeps a ws.Client from connecting.
//
// OnMessage, OnReset and OnError are called one at a time (OnError aside),
// from the goroutine of a Subscribe or Resubscribe or of the connection's
// notification handler; they must not call Subscribe or Resubscribe (which
// would wait for them), and while one runs the Follower's other topics and
// a Resubscribe wait. The zero value follows nothing and drops every
// message; set the fields before first use. A Follower is safe for
// concurrent use.
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

	// OnError, if set, is called when the server refuses a followed
	// topic on a subscribe the Follower made by itself (Resubscribe, or
	// one after a gap), and when the server removes the connection from
	// a topic (topic.kicked, Hub.Kick: an error wrapping ErrKicked, with
	// the server's reason); the topic is no longer followed, and not
	// subscribed again by Resubscribe; a subscribe of it still in flight
	// when topic.kicked comes is followed by topic.unsubscribe if it
	// succeeds (TestReviewFollowerKickedDuringResubscribeLeavesNothing).
	// Without it, such a refusal is dropped with the topic.
	OnError func(topic string, err error)

	// OnPresence, if set, is called with every topic.presence of a
	// followed topic (on the topics the server's Hub.Presence turns
	// presence on for): who joined and left it. Members asks for the
	// list. After Resubscribe subscribes a topic again, the Follower asks
	// topic.members and calls OnPresence once with who came and went
	// while it was away (TestReviewPresenceAfterReconnect). Called one at a time with OnMessage, in the order the server
	// sent them.
	OnPresence func(PresenceParams)

	// History, if positive, asks for a backlog: every subscribe that has
	// no position (the first) or whose position cannot be recovered
	// (another epoch) asks for the topic's last History messages, and
	// they follow the OnReset through OnMessage, in order, before any
	// live message, each once: OnReset's at is the position before the
	// first of them. The server gives at most what one reply may carry
	// (Hub.MaxReplyMessages, Hub.MaxReplyBytes) and what it holds.
	// Default: 0, no backlog (OnReset at the topic's last position).
	History int

	// MaxBuffered bounds the messages of a topic held while a subscribe
	// is in flight; beyond it they are dropped and the topic subscribes
	// again once the reply is in, recovering them from the history.
	// Default: 4096; negative: no bound.
	MaxBuffered int

	registered atomic.Bool // Register was called (follower_register.go)
	deliver    sync.Mutex  // held while computing and making the calls above, in order
	mu         sync.Mutex  // guards topics and leaving
	topics     map[string]*followed
	leaving    map[string]chan struct{} // topics whose topic.unsubscribe is in flight, closed with its reply
	kickedIn   map[string]kickedIn      // topics kicked while subscribes of them were in flight
}

// maxRounds bounds the subscribes one call makes in a row, each one asked
// for by the reply of the one before (a gap, an overflow) without moving
// the topic's position; pages of a long catch-up move it, and do not
// count.
const maxRounds = 16

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
// connection, even when this call fails, unless the server refused it
// (then Subscribe returns its error, and the topic is not followed) or
// until Unsubscribe. On a Peer that has ended Subscribe fails with an
// error wrapping jsonrpc.ErrClosed and leaves the topic on the connection
// it was on.
func (f *Follower) Subscribe(ctx context.Context, p *jsonrpc.Peer, topic string) error {
	if err := f.served(p); err != nil {
		return fmt.Errorf("topic: cannot subscribe to %q: %w", topic, err)
	}
	f.mu.Lock()
	for f.leaving[topic] != nil {
		// The server runs calls concurrently: a subscribe sent while the
		// unsubscribe of the same topic is in flight could be undone by
		// it. Wait for its reply.
		left := f.leaving[topic]
		f.mu.Unlock()
		select {
		case <-left:
		case <-ctx.Done():
			return fmt.Errorf("topic: cannot subscribe to %q while its unsubscribe is in flight: %w", topic, ctx.Err())
		}
		f.mu.Lock()
	}
	if f.topics == nil {
		f.topics = make(map[string]*followed)
	}
	if f.topics[topic] == nil {
		f.topics[topic] = &followed{}
		delete(f.kickedIn, topic) // followed again: its subscribes in flight hold
	}
	f.mu.Unlock()
	if ended(p) {
		return fmt.Errorf("topic: cannot subscribe to %q: %w", topic, jsonrpc.ErrClosed)
	}
	return f.subscribe(ctx, p, topic, withSince)
}

// Resubscribe subscribes every followed topic on p, each with its
// position: the OnConnect of a ws.Client (ws.ClientOptions.OnConnect). It
// returns the errors of those that failed, joined, but refusals (see
// OnError): as an OnConnect, an error drops the connection and the Client
// tries again.
func (f *Follower) Resubscribe(ctx context.Context, p *jsonrpc.Peer) error {
	if ended(p) {
		return fmt.Errorf("topic: cannot subscribe again: %w", jsonrpc.ErrClosed)
	}
	if err := f.served(p); err != nil {
		return fmt.Errorf("topic: cannot subscribe again: %w", err)
	}
	f.mu.Lock()
	names := make([]string, 0, len(f.topics))
	for name, t := range f.topics {
		names = append(names, name)
		t.asking = true
	}
	f.mu.Unlock()
	var errs []error
	for _, name := range names {
		err := f.subscribe(ctx, p, name, withSince)
		f.presenceAgain(ctx, p, name, err == nil)
		if err != nil && !f.refusedBy(name, err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Unsubscribe stops following topic and, if p is not nil, calls
// topic.unsubscribe on it; a Subscribe of the same topic waits for its
// reply. It does not wait for a subscribe of the topic in flight (whose
// reply, when it comes, is dropped): the Hub applies an unsubscribe that
// overlaps a subscribe once that subscribe ends, and the Follower could
// not know when that is anyway (a subscribe whose ctx ended is given up
// here, not on the server).
func (f *Follower) Unsubscribe(ctx context.Context, p *jsonrpc.Peer, topic string) error {
	f.mu.Lock()
	delete(f.topics, topic)
	if p == nil {
		f.mu.Unlock()
		return nil
	}
	if err := f.awaitLeaving(ctx, topic); err != nil {
		return err
	}
	delete(f.topics, topic) // a Subscribe that came meanwhile is undone
	return f.leave(ctx, p, topic)
}

// awaitLeaving waits, f.mu held, until no topic.unsubscribe of topic is
// in flight (one at a time), and returns with f.mu held, or unlocked with
// ctx's error.
func (f *Follower) awaitLeaving(ctx context.Context, topic string) error {
	for f.leaving[topic] != nil {
		left := f.leaving[topic]
		f.mu.Unlock()
		select {
		case <-left:
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
	}
	return nil
}

// leave, called with f.mu held, unlocks it and calls topic.unsubscribe on
// p, filed in f.leaving while in flight.
func (f *Follower) leave(ctx context.Context, p *jsonrpc.Peer, topic string) error {
	if f.leaving == nil {
		f.leaving = make(map[string]chan struct{})
	}
	left := make(chan struct{})
	f.leaving[topic] = left
	f.mu.Unlock()
	err := p.Call(ctx, MethodUnsubscribe, UnsubscribeParams{Topic: topic}, nil)
	f.mu.Lock()
	delete(f.leaving, topic)
	close(left)
	f.mu.Unlock()
	return err
}

// refusedBy reports whether err is the server's refusal of topic, and if
// so hands it to OnError.
func (f *Follower) refusedBy(topic string, err error) bool {
	if !refusal(err) {
		return false
	}
	if f.OnError != nil {
		f.OnError(topic, err)
	}
	return true
}

// refusal reports whether err is an error reply that says no for good:
// any but internal error (the history unavailable for now), overloaded
// and shutting down.
func refusal(err error) bool {
	e, ok := errors.AsType[*jsonrpc.Error](err)
	if !ok {
		return false
	}
	switch e.Code {
	case jsonrpc.CodeInternalError, jsonrpc.CodeOverloaded, jsonrpc.CodeShuttingDown:
		return false
	}
	return true
}

// ended reports whether p's connection has ended.
func ended(p *jsonrpc.Peer) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}
