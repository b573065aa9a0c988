package topic

import (
	"context"
	"fmt"
	"slices"

	"github.com/peerwire/jsonrpc"
)

// presence handles topic.presence: it hands the changes of a followed
// topic's presence to OnPresence.
func (f *Follower) presence(ctx context.Context, e PresenceParams) error {
	p := jsonrpc.PeerFromContext(ctx)
	f.deliver.Lock()
	defer f.deliver.Unlock()
	f.mu.Lock()
	t := f.topics[e.Topic]
	ok := t != nil && t.peer == p // followed, and not from an old connection
	if ok && e.Version > t.presVer {
		t.presVer = e.Version
		if t.present == nil {
			t.present = make(map[string]bool)
		}
		for _, id := range e.Joined {
			t.present[id] = true
		}
		for _, id := range e.Left {
			delete(t.present, id)
		}
	}
	f.mu.Unlock()
	if ok && f.OnPresence != nil {
		f.OnPresence(e)
	}
	return nil
}

// presenceAgain runs after a topic is subscribed again on a new
// connection p (subscribed: with success), and ends the asking that
// Resubscribe began: nothing told the Follower who left or came while it was
// away, so it asks topic.members and hands OnPresence the difference
// from what it had told, as one change of the list's version (above the
// versions of the connection before when it is the same server's Hub:
// TestReviewPresenceAfterReconnect). A topic without presence (the server
// refuses topic.members) or a Follower without OnPresence asks nothing; a
// topic.members that fails leaves the list to the next topic.presence.
func (f *Follower) presenceAgain(ctx context.Context, p *jsonrpc.Peer, name string, subscribed bool) {
	var r MembersResult
	asked := subscribed && f.OnPresence != nil && p.Call(ctx, MethodMembers, MembersParams{Topic: name}, &r) == nil
	f.deliver.Lock()
	defer f.deliver.Unlock()
	f.mu.Lock()
	t := f.topics[name]
	if t != nil {
		t.asking = false
	}
	if !asked || t == nil || t.peer != p {
		f.mu.Unlock()
		return
	}
	e := t.replace(r)
	f.mu.Unlock()
	if len(e.Joined) > 0 || len(e.Left) > 0 {
		f.OnPresence(e)
	}
}

// replace makes r, a topic.members reply, what t's presence is, and
// returns the change from what it was (f.mu held). Ids past the last of a
// cut list (r.More) are not known to have left.
func (t *followed) replace(r MembersResult) PresenceParams {
	e := PresenceParams{Topic: r.Topic, Joined: []string{}, Left: []string{}, Count: r.Count, More: r.More, Version: r.Version}
	now := make(map[string]bool, len(r.Members))
	for _, id := range r.Members {
		now[id] = true
		if !t.present[id] {
			e.Joined = append(e.Joined, id)
		}
	}
	last := ""
	if len(r.Members) > 0 {
		last = r.Members[len(r.Members)-1]
	}
	for id := range t.present {
		if !now[id] && (!r.More || id < last) {
			e.Left = append(e.Left, id)
		} else if !now[id] {
			now[id] = true // not in the cut list: kept
		}
	}
	slices.Sort(e.Left)
	t.present, t.presVer = now, max(t.presVer, r.Version)
	return e
}

// Members asks the server, on p, for the identities present on topic
// (topic.members): at most the server's Hub.MaxPresence of them, sorted,
// with More set when there are more (Count says how many), as of the
// topic.presence of the result's Version; OnPresence's later changes
// (a higher Version) apply to it; the Follower starts from it too, and
// after a reconnection asks again and hands OnPresence the difference
// (see presenceAgain). The topic must be followed on p, and
// presence on for it on the server: otherwise the server refuses it
// (CodeNoSuchTopic).
func (f *Follower) Members(ctx context.Context, p *jsonrpc.Peer, topic string) (MembersResult, error) {
	var r MembersResult
	if err := p.Call(ctx, MethodMembers, MembersParams{Topic: topic}, &r); err != nil {
		return MembersResult{}, fmt.Errorf("topic: cannot list who is present on %q: %w", topic, err)
	}
	f.mu.Lock()
	if t := f.topics[topic]; t != nil && t.peer == p && !t.asking && r.Version >= t.presVer {
		// The application starts its list from r: so does the Follower
		// (not while Resubscribe asks: the difference is for OnPresence).
		t.replace(r)
	}
	f.mu.Unlock()
	return r, nil
}
