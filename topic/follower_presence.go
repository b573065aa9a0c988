package topic

import (
	"context"
	"fmt"

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
	f.mu.Unlock()
	if ok && f.OnPresence != nil {
		f.OnPresence(e)
	}
	return nil
}

// Members asks the server, on p, for the identities present on topic
// (topic.members): at most the server's Hub.MaxPresence of them, sorted,
// with More set when there are more (Count says how many), as of the
// topic.presence of the result's Version; OnPresence's later changes
// (a higher Version) apply to it. The topic must be followed on p, and
// presence on for it on the server: otherwise the server refuses it
// (CodeNoSuchTopic).
func (f *Follower) Members(ctx context.Context, p *jsonrpc.Peer, topic string) (MembersResult, error) {
	var r MembersResult
	if err := p.Call(ctx, MethodMembers, MembersParams{Topic: topic}, &r); err != nil {
		return MembersResult{}, fmt.Errorf("topic: cannot list who is present on %q: %w", topic, err)
	}
	return r, nil
}
