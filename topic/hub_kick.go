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
	ok := h.kick(p, topic, nil)
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
// their connections), and returns how many it kicked: those that follow
// topic as id, and those with a subscribe of it in progress as id (a
// page that reconnects: TestReviewKickIdentityDuringReconnection). It
// looks at every connection of this process (on a cluster, each node
// kicks its own). It fails with ErrNoIdentity on a Hub without Identity, and for an empty id.
func (h *Hub) KickIdentity(ctx context.Context, id, topic, reason string) (int, error) {
	switch {
	case h.Identity == nil:
		return 0, ErrNoIdentity
	case id == "":
		return 0, errors.New("topic: cannot kick the empty identity: it names no user")
	}
	var peers []*jsonrpc.Peer
	h.mu.Lock()
	for p := range h.conns {
		if h.kick(p, topic, &id) {
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

// kick takes p out of topic, and makes its subscribes of topic in
// progress fail (even those that Allow has let through: they join
// nothing), and reports whether it found either. With id not nil, only
// those whose Hub.Identity was *id. h.mu held.
func (h *Hub) kick(p *jsonrpc.Peer, topic string, id *string) bool {
	c := h.conns[p]
	if c == nil {
		return false
	}
	found := false
	for s := range c.subscribing {
		if s.topic == topic && (id == nil || s.id == *id) {
			s.kicked, found = true, true
		}
	}
	if m := c.topics[topic]; m != nil && (id == nil || m.id == *id) {
		h.drop(p, m)
		found = true
	}
	return found
}
