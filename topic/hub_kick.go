package topic

import (
	"context"
	"errors"
	"fmt"

	"github.com/peerwire/jsonrpc"
)

// Kick removes the connection p from topic's subscribers without ending
// the connection, and sends it topic.kicked with reason (for the
// application; it may be empty), so that the client stops following the
// topic and does not subscribe to it again by itself (Follower and
// jsonrpc.js report it: OnError with ErrKicked, onError). It reports
// whether p followed topic; its error is the notification's (ctx ended,
// p's connection ended). Kick does not stop a later subscribe: change
// what Allow answers first (revoke the member), then kick. A subscribe of
// topic in progress on p when Kick runs is removed too, and its reply may
// reach the client after topic.kicked.
func (h *Hub) Kick(ctx context.Context, p *jsonrpc.Peer, topic, reason string) (bool, error) {
	h.mu.Lock()
	ok := h.kick(p, topic)
	h.mu.Unlock()
	if !ok {
		return false, nil
	}
	if err := p.Notify(ctx, MethodKicked, KickedParams{Topic: topic, Reason: reason}); err != nil {
		return true, fmt.Errorf("topic: removed a subscriber of %q but could not tell it: %w", topic, err)
	}
	return true, nil
}

// KickIdentity kicks every connection whose Hub.Identity is id from
// topic, as Kick does each (revoking a member of a private room on all
// their connections), and returns how many it kicked. It looks at every
// connection of this process (on a cluster, each node kicks its own). It
// fails with ErrNoIdentity on a Hub without Identity, and for an empty id.
func (h *Hub) KickIdentity(ctx context.Context, id, topic, reason string) (int, error) {
	switch {
	case h.Identity == nil:
		return 0, ErrNoIdentity
	case id == "":
		return 0, errors.New("topic: cannot kick the empty identity: it names no user")
	}
	var peers []*jsonrpc.Peer
	h.mu.Lock()
	for p, c := range h.conns {
		if c.id == id && h.kick(p, topic) {
			peers = append(peers, p)
		}
	}
	h.mu.Unlock()
	var errs []error
	for _, p := range peers {
		if err := p.Notify(ctx, MethodKicked, KickedParams{Topic: topic, Reason: reason}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return len(peers), fmt.Errorf("topic: removed %d subscribers of %q, could not tell %d: %w", len(peers), topic, len(errs), err)
	}
	return len(peers), nil
}

// kick takes p out of topic, whatever subscribes of it are in progress,
// and reports whether it followed it. h.mu held.
func (h *Hub) kick(p *jsonrpc.Peer, topic string) bool {
	c := h.conns[p]
	if c == nil || c.topics[topic] == nil {
		return false
	}
	h.drop(p, c.topics[topic])
	return true
}
