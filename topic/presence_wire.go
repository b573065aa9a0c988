package topic

import "errors"

// The presence protocol: who is subscribed to a topic now, by
// Hub.Identity, on the topics Hub.Presence turns it on for.
const (
	// MethodPresence is the notification the server sends to a topic's
	// subscribers when identities joined or left it, with
	// PresenceParams: the net changes of a short window (Hub.PresenceWindow),
	// at most Hub.MaxPresence of each kind.
	MethodPresence = "topic.presence"
	// MethodMembers is the call a subscriber of a topic with presence
	// makes for the identities present on it, with MembersParams; the
	// result is a MembersResult, at most Hub.MaxPresence of them.
	MethodMembers = "topic.members"
)

// Defaults of a Hub's presence bounds.
const (
	DefaultMaxPresence    = 100 // identities in one topic.members reply, and in each list of one topic.presence
	DefaultPresenceWindow = 250 // milliseconds: the changes of a topic within it go out as one topic.presence
)

// ErrNoPresence is returned by Hub.Present on a Hub without Presence, or
// for a topic Presence does not turn presence on for.
var ErrNoPresence = errors.New("topic: presence is off for the topic (Hub.Presence)")

// PresenceParams are the params of topic.presence: the identities that
// joined the topic (their first connection subscribed) and left it (their
// last connection went) since the last topic.presence, net (an identity
// that joined and left meanwhile is in neither), each list sorted and at
// most Hub.MaxPresence long; More says that one was cut (ask topic.members
// for the list). Count is the number of identities present after the
// change, and Version is higher than every version the Hub gave before
// (one counter for all its topics, so it never goes backwards when a
// topic nobody followed for a while is followed again): a topic.members
// reply of a Version includes every change up to it.
type PresenceParams struct {
	Topic   string   `json:"topic"`
	Joined  []string `json:"joined"`
	Left    []string `json:"left"`
	Count   int      `json:"count"`
	More    bool     `json:"more,omitempty"`
	Version uint64   `json:"version"`
}

// MembersParams are the params of topic.members.
type MembersParams struct {
	Topic string `json:"topic"`
}

// MembersResult is the result of topic.members: the identities present on
// the topic now, as far as the Hub knows (the caller included, and
// changes that the next topic.presence, of a higher Version, repeats),
// with the Version of the last topic.presence (0: before the first),
// sorted, the first Hub.MaxPresence of them (More: there are more; Count
// says how many in all). Apply the topic.presence notifications of a
// higher Version to it; a lower one is in it already.
type MembersResult struct {
	Topic   string   `json:"topic"`
	Members []string `json:"members"`
	Count   int      `json:"count"`
	More    bool     `json:"more,omitempty"`
	Version uint64   `json:"version"`
}
