package topic

import (
	"context"
	"errors"
	"fmt"

	"github.com/peerwire/jsonrpc"
)

// The handlers of topic.subscribe and topic.unsubscribe, and what the Hub
// keeps per connection: the topics it follows, each with the subscribes
// of it in progress.

// hubConn is what a Hub keeps of one connection, until it ends.
type hubConn struct {
	topics      map[string]*membership
	subscribing map[*subscribing]bool // subscribes in progress, from before Allow
	stop        func() bool           // unregisters the Peer's AfterFunc
	replyBudget                       // subscribe replies built and not yet queued (hub_budget.go)
}

// subscribing is one subscribe in progress, filed before it asks Allow so
// that a kick that comes after Allow said yes, before the subscribe joins
// the topic, is not missed: join refuses a subscribe kicked meanwhile.
// There are as many as the connection's calls in progress.
type subscribing struct {
	topic  string
	id     string // Hub.Identity's answer for this subscribe
	kicked bool   // a Kick or KickIdentity of topic came meanwhile
}

// membership is one connection following one topic.
type membership struct {
	t        *hubTopic
	id       string // Hub.Identity's answer for the subscribe that joined
	inflight int    // subscribes of it in progress
	ok       bool   // one of them succeeded
	leave    bool   // an unsubscribe came meanwhile: leave once they end
	presence bool   // counted in the topic's presence (hub_presence.go)
}

var (
	// errNotAllowed is what a subscribe gets from a Hub without Allow.
	errNotAllowed = jsonrpc.NewError(CodeNoSuchTopic, "no such topic",
		map[string]string{"reason": "the server's topic.Hub allows no topic: it has no Allow"})

	// errUnavailable is the error a client gets when a topic's log
	// failed: an internal error, without the details.
	errUnavailable = jsonrpc.NewError(jsonrpc.CodeInternalError, "topic history unavailable", nil)

	errHubClosed  = jsonrpc.NewError(jsonrpc.CodeShuttingDown, "topic hub closed", nil)
	errHubFull    = jsonrpc.NewError(jsonrpc.CodeOverloaded, "too many topics open on the server; try again later", nil)
	errConnTopics = jsonrpc.NewError(CodeTooManyTopics, "too many topics on this connection", nil)

	// errKickedSubscribe is what a subscribe gets when its topic was
	// kicked from its connection while it was in progress.
	errKickedSubscribe = jsonrpc.NewError(CodeNoSuchTopic, "no such topic",
		map[string]string{"reason": "kicked from the topic while subscribing"})
)

// subscribe serves topic.subscribe: the subscriber first, then the
// history, so that no message falls between the reply and the live ones.
func (h *Hub) subscribe(ctx context.Context, p SubscribeParams) (SubscribeResult, error) {
	if err := h.checkName(p.Topic); err != nil {
		return SubscribeResult{}, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "topic.subscribe: "+err.Error(), nil)
	}
	if p.History < 0 {
		return SubscribeResult{}, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "topic.subscribe: history is negative", nil)
	}
	peer := jsonrpc.PeerFromContext(ctx)
	s, err := h.begin(ctx, peer, p.Topic)
	if err != nil {
		return SubscribeResult{}, err
	}
	defer h.end(peer, s)
	if err := h.allow(ctx, p.Topic); err != nil {
		return SubscribeResult{}, err
	}
	t, err := h.acquire(ctx, p.Topic)
	switch {
	case errors.Is(err, ErrClosed):
		return SubscribeResult{}, errHubClosed
	case errors.Is(err, ErrTooManyTopics):
		return SubscribeResult{}, errHubFull
	case err != nil:
		return SubscribeResult{}, errUnavailable
	}
	m, err := h.join(peer, t, s)
	if err != nil {
		h.release(t)
		return SubscribeResult{}, err
	}
	perr := h.presenceJoined(ctx, m)
	hist, err := h.read(ctx, t.log, p)
	if err != nil || perr != nil {
		err = errUnavailable
	} else {
		err = h.reserve(ctx, peer, replyCost(p.Topic, hist))
	}
	h.joined(peer, m, err == nil)
	h.release(t)
	if err != nil {
		return SubscribeResult{}, err
	}
	r := SubscribeResult{Topic: p.Topic, Epoch: hist.Last.Epoch, Seq: hist.Last.Seq, Recovered: hist.Recovered,
		Messages: hist.Messages, More: hist.More && len(hist.Messages) > 0}
	if r.More {
		r.Seq = hist.Messages[len(hist.Messages)-1].Seq
	}
	if r.Messages == nil {
		r.Messages = []Entry{}
	}
	return r, nil
}

// read reads what a subscribe's reply carries: the messages after since,
// or, when they cannot be recovered and p asks for history, the last of
// the topic's messages (bounded as every reply is).
func (h *Hub) read(ctx context.Context, l Log, p SubscribeParams) (History, error) {
	if p.Since == nil && p.History > 0 {
		return l.Tail(ctx, p.History, h.limit())
	}
	hist, err := l.Since(ctx, p.Since, h.limit())
	if err != nil || hist.Recovered || p.History == 0 {
		return hist, err
	}
	return l.Tail(ctx, p.History, h.limit())
}

// allow asks Allow, and maps its refusal to the error the client gets.
func (h *Hub) allow(ctx context.Context, name string) error {
	if h.Allow == nil {
		return errNotAllowed
	}
	err := h.Allow(ctx, name)
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return e
	}
	return ErrNoSuchTopic
}

// begin files a subscribe of topic in progress on peer, with the identity
// Hub.Identity answers for it now (read at every subscribe: a client may
// sign in after its first one), before Allow is asked. A nil peer (a
// handler called outside a Peer) follows nothing.
func (h *Hub) begin(ctx context.Context, peer *jsonrpc.Peer, topic string) (*subscribing, error) {
	if peer == nil {
		return nil, nil
	}
	s := &subscribing{topic: topic}
	if h.Identity != nil {
		s.id = h.Identity(ctx) // not under h.mu: the application's code
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errHubClosed
	}
	c := h.conns[peer]
	if c == nil {
		c = &hubConn{topics: make(map[string]*membership), subscribing: make(map[*subscribing]bool)}
		if h.conns == nil {
			h.conns = make(map[*jsonrpc.Peer]*hubConn)
		}
		h.conns[peer] = c
		c.stop = peer.AfterFunc(func() { h.leave(peer) })
	}
	c.subscribing[s] = true
	return s, nil
}

// end forgets the subscribe in progress s that begin filed.
func (h *Hub) end(peer *jsonrpc.Peer, s *subscribing) {
	if s == nil {
		return
	}
	h.mu.Lock()
	if c := h.conns[peer]; c != nil {
		delete(c.subscribing, s)
	}
	h.mu.Unlock()
}

// join makes peer a follower of t, within MaxConnTopics, and counts a
// subscribe in progress, unless s was kicked since it began.
func (h *Hub) join(peer *jsonrpc.Peer, t *hubTopic, s *subscribing) (*membership, error) {
	if s == nil {
		return nil, nil
	}
	pres, err := h.presenceOn(t.name) // the application's code
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.conns[peer]
	switch {
	case h.closed:
		return nil, errHubClosed
	case c == nil || !c.subscribing[s]:
		return nil, fmt.Errorf("topic: cannot subscribe: %w", jsonrpc.ErrClosed) // its connection ended
	case s.kicked:
		return nil, errKickedSubscribe
	}
	m := c.topics[t.name]
	if m == nil {
		if max := bound(h.MaxConnTopics, DefaultMaxConnTopics); max >= 0 && len(c.topics) >= max {
			return nil, errConnTopics
		}
		m = &membership{t: t, id: s.id, presence: pres}
		c.topics[t.name] = m
		t.subs++
		t.group.Add(peer)
		if pres {
			h.presenceAdd(t.name, m.id)
		}
	}
	m.inflight++
	m.leave = false // this subscribe came after the unsubscribe: it holds
	return m, nil
}

// joined ends a subscribe that join counted: once none is in progress,
// the follower is taken out again if none of them succeeded, or if an
// unsubscribe came while they ran (and no subscribe after it).
func (h *Hub) joined(peer *jsonrpc.Peer, m *membership, ok bool) {
	if m == nil {
		return
	}
	h.mu.Lock()
	m.inflight--
	m.ok = m.ok || ok
	if m.inflight == 0 && (!m.ok || m.leave) {
		h.drop(peer, m)
	}
	h.mu.Unlock()
}

// drop takes peer out of m's topic. h.mu held.
func (h *Hub) drop(peer *jsonrpc.Peer, m *membership) {
	c := h.conns[peer]
	if c == nil || c.topics[m.t.name] != m {
		return
	}
	delete(c.topics, m.t.name)
	m.t.group.Remove(peer)
	m.t.subs--
	h.settle(m.t)
	if m.presence {
		h.presenceRemove(m.t.name, m.id)
	}
}

// leave forgets a connection that ended, and what only it held.
func (h *Hub) leave(peer *jsonrpc.Peer) {
	h.mu.Lock()
	c := h.conns[peer]
	delete(h.conns, peer)
	if c != nil {
		for _, m := range c.topics {
			m.t.subs--
			h.settle(m.t)
			if m.presence {
				h.presenceRemove(m.t.name, m.id)
			}
		}
	}
	h.mu.Unlock()
}

// unsubscribe serves topic.unsubscribe. A subscription whose subscribe is
// still in progress is left once that subscribe ends (see Hub: the two
// overlapped; the subscribe replies as it would have, then the
// unsubscribe takes effect), unless another subscribe joins meanwhile.
func (h *Hub) unsubscribe(ctx context.Context, p UnsubscribeParams) (bool, error) {
	if p.Topic == "" {
		return false, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "topic.unsubscribe: topic is missing", nil)
	}
	peer := jsonrpc.PeerFromContext(ctx)
	h.mu.Lock()
	if c := h.conns[peer]; c != nil {
		switch m := c.topics[p.Topic]; {
		case m == nil:
		case m.inflight > 0:
			m.leave = true
		default:
			h.drop(peer, m)
		}
	}
	h.mu.Unlock()
	return true, nil
}
