package topic

import (
	"context"
	"errors"
	"fmt"
)

// History returns the last n messages of topic's history (fewer if it
// holds fewer), in seq order, each with its position, and the topic's
// last position: what a server reads to show a backlog, or to send one
// its own way. No reply bound applies (n does; a Store bounds what it
// keeps). A topic the Hub does not hold open has no history in the
// default Memory store: History answers the zero Position and no message,
// and opens nothing; with another Store (the cluster module's, whose
// history outlives a node) the topic is opened to read it, and released
// as a subscribe's would be. It fails with ErrClosed after Close, and
// with ErrTooManyTopics when Hub.MaxTopics are open and busy.
func (h *Hub) History(ctx context.Context, topic string, n int) (last Position, msgs []Message, err error) {
	if err := h.checkName(topic); err != nil {
		return Position{}, nil, fmt.Errorf("topic: cannot read the history of %.40q: %w", topic, err)
	}
	if n < 0 {
		return Position{}, nil, errors.New("topic: cannot read a negative number of messages")
	}
	h.mu.Lock()
	closed, open, memory := h.closed, h.topics[topic] != nil, h.Store == nil
	h.mu.Unlock()
	_, isMem := h.Store.(*Memory)
	if !closed && !open && (memory || isMem) {
		return Position{}, nil, nil
	}
	t, err := h.acquire(ctx, topic)
	if err != nil {
		return Position{}, nil, err
	}
	defer h.release(t)
	hist, err := t.log.Tail(ctx, n, Limit{})
	if err != nil {
		return Position{}, nil, fmt.Errorf("topic: failed to read the history of %q: %w", topic, err)
	}
	msgs = make([]Message, 0, len(hist.Messages))
	for _, e := range hist.Messages {
		msgs = append(msgs, Message{Topic: topic, Epoch: hist.Last.Epoch, Seq: e.Seq, Data: e.Data})
	}
	return hist.Last, msgs, nil
}
