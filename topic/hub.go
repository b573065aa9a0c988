package topic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/peerwire/jsonrpc"
)

// A Hub is the server side of topics: it serves topic.subscribe and
// topic.unsubscribe (Register), keeps each topic's history in its Store,
// and sends every message published on a topic to its subscribers as a
// topic.message notification.
//
// Each topic delivers to its subscribers through a jsonrpc.Group, with its
// slow-consumer policy: a subscriber whose queue (MaxQueue) is full is
// dropped, its connection ended with a cause wrapping
// jsonrpc.ErrSlowConsumer, and nobody else waits; a client that comes back
// with its position recovers what it missed from the history. A subscriber
// leaves when its connection ends.
//
// Per topic and per connection, messages go out in seq order. A subscriber
// is added before the history is read for its reply, so a live message
// may arrive before the reply, and every message after the reply's seq
// arrives live: nothing falls between them, and the client drops the
// duplicates (Follower does).
//
// A Hub keeps every topic it has opened (by Publish or a subscribe) until
// Close: use Allow to bound which names clients may open. The zero value is
// a Hub with in-memory history ready to use; set its fields before first
// use. A Hub is safe for concurrent use.
type Hub struct {
	// Store keeps the topics' history. Default: a zero Memory (1 MiB and
	// 5 minutes per topic).
	Store Store

	// Allow, if set, decides which topics a connection may subscribe to:
	// ctx is the subscribe handler's (jsonrpc.PeerFromContext gives the
	// Peer, and behind ws.Server the upgrade request's values are there).
	// A *jsonrpc.Error it returns goes to the client as it is; any other
	// error as ErrNoSuchTopic (-32001). Default: every topic.
	Allow func(ctx context.Context, topic string) error

	// MaxQueue bounds the messages queued for each subscriber of a topic
	// (jsonrpc.Group.MaxQueue). Default: 256.
	MaxQueue int

	mu     sync.Mutex
	topics map[string]*hubTopic
	closed bool
	mem    Memory // the default Store
}

// hubTopic is one topic of a Hub: its log, once open, and its subscribers.
type hubTopic struct {
	name  string
	ready chan struct{} // closed once log or err is set
	log   Log
	err   error
	group jsonrpc.Group
}

// Register registers topic.subscribe and topic.unsubscribe on m.
func (h *Hub) Register(m *jsonrpc.Mux) {
	jsonrpc.Register(m, MethodSubscribe, h.subscribe)
	jsonrpc.Register(m, MethodUnsubscribe, h.unsubscribe)
}

// Publish appends data (marshalled with encoding/json; a json.RawMessage
// goes as it is) to the topic's history and sends it to every subscriber,
// on every node for a shared Store. It returns the message's position once
// the Store has it, without waiting for any subscriber.
func (h *Hub) Publish(ctx context.Context, topic string, data any) (Position, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Position{}, fmt.Errorf("topic: failed to marshal data for %q: %w", topic, err)
	}
	t, err := h.topic(ctx, topic)
	if err != nil {
		return Position{}, err
	}
	pos, err := t.log.Append(ctx, raw)
	if err != nil {
		return Position{}, fmt.Errorf("topic: failed to publish on %q: %w", topic, err)
	}
	return pos, nil
}

// Subscribers returns the number of this process's subscribers of topic.
func (h *Hub) Subscribers(topic string) int {
	h.mu.Lock()
	t := h.topics[topic]
	h.mu.Unlock()
	if t == nil {
		return 0
	}
	return t.group.Len()
}

// Close closes every topic's log, stopping their deliveries. Publish and
// topic.subscribe fail afterwards. Close ends no Peer; it returns the
// first error of the logs' Close, and may be called more than once.
func (h *Hub) Close() error {
	h.mu.Lock()
	h.closed = true
	topics := h.topics
	h.topics = nil
	h.mu.Unlock()
	var errs []error
	for _, t := range topics {
		<-t.ready
		if t.log != nil {
			errs = append(errs, t.log.Close())
		}
	}
	return errors.Join(errs...)
}

// topic returns the topic called name, opening its log on first use.
func (h *Hub) topic(ctx context.Context, name string) (*hubTopic, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	t := h.topics[name]
	if t == nil {
		t = &hubTopic{name: name, ready: make(chan struct{})}
		t.group.MaxQueue = h.MaxQueue
		if h.topics == nil {
			h.topics = make(map[string]*hubTopic)
		}
		h.topics[name] = t
		st := h.Store
		if st == nil {
			st = &h.mem
		}
		h.mu.Unlock()
		t.log, t.err = st.Open(ctx, name, t.deliver)
		if t.err != nil {
			t.err = fmt.Errorf("topic: failed to open %q: %w", name, t.err)
			h.mu.Lock()
			if h.topics[name] == t {
				delete(h.topics, name) // the next use tries again
			}
			h.mu.Unlock()
		}
		close(t.ready)
	} else {
		h.mu.Unlock()
		select {
		case <-t.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if t.err != nil {
		return nil, t.err
	}
	return t, nil
}

// deliver sends one message of the topic's log to its subscribers.
func (t *hubTopic) deliver(pos Position, data json.RawMessage) {
	// Group.Notify fails only if the params cannot be marshalled, and
	// these are a string, numbers and JSON the log was given.
	_ = t.group.Notify(MethodMessage, Message{Topic: t.name, Epoch: pos.Epoch, Seq: pos.Seq, Data: data})
}

// subscribe serves topic.subscribe: the subscriber first, then the
// history, so that no message falls between the reply and the live ones.
func (h *Hub) subscribe(ctx context.Context, p SubscribeParams) (SubscribeResult, error) {
	if p.Topic == "" {
		return SubscribeResult{}, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "topic.subscribe: topic is missing", nil)
	}
	if h.Allow != nil {
		if err := h.Allow(ctx, p.Topic); err != nil {
			if e, ok := errors.AsType[*jsonrpc.Error](err); ok {
				return SubscribeResult{}, e
			}
			return SubscribeResult{}, ErrNoSuchTopic
		}
	}
	t, err := h.topic(ctx, p.Topic)
	if err != nil {
		return SubscribeResult{}, errUnavailable
	}
	if peer := jsonrpc.PeerFromContext(ctx); peer != nil {
		t.group.Add(peer)
	}
	hist, err := t.log.Since(ctx, p.Since)
	if err != nil {
		return SubscribeResult{}, errUnavailable
	}
	r := SubscribeResult{Topic: p.Topic, Epoch: hist.Last.Epoch, Seq: hist.Last.Seq, Recovered: hist.Recovered, Messages: hist.Messages}
	if r.Messages == nil {
		r.Messages = []Entry{}
	}
	return r, nil
}

// errUnavailable is the error a client gets when a topic's log failed: an
// internal error, without the details.
var errUnavailable = jsonrpc.NewError(jsonrpc.CodeInternalError, "topic history unavailable", nil)

// unsubscribe serves topic.unsubscribe.
func (h *Hub) unsubscribe(ctx context.Context, p UnsubscribeParams) (bool, error) {
	if p.Topic == "" {
		return false, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "topic.unsubscribe: topic is missing", nil)
	}
	h.mu.Lock()
	t := h.topics[p.Topic]
	h.mu.Unlock()
	if t != nil {
		if peer := jsonrpc.PeerFromContext(ctx); peer != nil {
			t.group.Remove(peer)
		}
	}
	return true, nil
}
