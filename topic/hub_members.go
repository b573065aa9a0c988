package topic

import (
	"context"
	"fmt"
	"slices"

	"github.com/peerwire/jsonrpc"
)

// errNotMember is what topic.members gets on a connection that does not
// follow the topic, or for a topic without presence: no more than a
// subscribe would have told it.
var errNotMember = jsonrpc.NewError(CodeNoSuchTopic, "no such topic",
	map[string]string{"reason": "topic.members needs a subscription to a topic with presence"})

// members serves topic.members: the identities present on a topic now,
// as the store's Watch told this Hub (changes not yet sent as
// topic.presence included, which the next one repeats), and the
// connection's own (its subscribe joined it in the store before its
// reply, and the Watch of a remote store may not have told it yet), for a
// connection that follows the topic
// (TestReviewMembersAfterSubscribeListsSubscriber).
func (h *Hub) members(ctx context.Context, p MembersParams) (MembersResult, error) {
	peer := jsonrpc.PeerFromContext(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.conns[peer]
	if c == nil || c.topics[p.Topic] == nil || !c.topics[p.Topic].presence {
		return MembersResult{}, errNotMember
	}
	pt := h.pres[p.Topic]
	if pt == nil || !pt.watching {
		// Its subscribe has not reached the store yet (or failed to).
		return MembersResult{}, errUnavailable
	}
	max := bound(h.MaxPresence, DefaultMaxPresence)
	own := c.topics[p.Topic].id
	count := len(pt.present)
	if own != "" && !pt.present[own] {
		count++ // the Watch has not told it yet: not cached
		ids, more := sortedCut(presentIDs(pt, own), max, false)
		return MembersResult{Topic: p.Topic, Members: ids, Count: count, More: more, Version: pt.version}, nil
	}
	if pt.list == nil {
		pt.list, _ = sortedCut(presentIDs(pt, ""), max, false)
	}
	return MembersResult{Topic: p.Topic, Members: pt.list, Count: count,
		More: max >= 0 && count > max, Version: pt.version}, nil
}

// presentIDs returns who is present on pt, and own if not empty. h.mu
// held.
func presentIDs(pt *presTopic, own string) []string {
	ids := make([]string, 0, len(pt.present)+1)
	for id := range pt.present {
		ids = append(ids, id)
	}
	if own != "" {
		ids = append(ids, own)
	}
	return ids
}

// Present returns the identities (Hub.Identity) present on topic now,
// through this Hub or any other sharing its PresenceStore (every node, on
// a cluster), sorted, all of them: what a server reads to show who is
// there. It fails with ErrNoIdentity on a Hub without Identity, and with
// ErrNoPresence for a topic Presence does not turn presence on for.
func (h *Hub) Present(ctx context.Context, topic string) ([]string, error) {
	on, err := h.presenceOn(topic)
	switch {
	case h.Identity == nil:
		return nil, ErrNoIdentity
	case err != nil:
		return nil, err
	case !on:
		return nil, fmt.Errorf("%w: %.40q", ErrNoPresence, topic)
	}
	h.mu.Lock()
	if pt := h.pres[topic]; pt != nil && pt.watching {
		ids := make([]string, 0, len(pt.present))
		for id := range pt.present {
			ids = append(ids, id)
		}
		h.mu.Unlock()
		slices.Sort(ids)
		return ids, nil
	}
	h.mu.Unlock()
	ids, err := h.presStore().List(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("topic: failed to list who is present on %q: %w", topic, err)
	}
	return ids, nil
}
