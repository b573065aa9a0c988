package topic

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// Defaults of a Hub's bounds.
const (
	DefaultMaxTopics         = 10000    // topics open at once, in all
	DefaultMaxConnTopics     = 128      // topics one connection follows
	DefaultMaxNameBytes      = 256      // bytes of a topic's name
	DefaultMaxReplyBytes     = 64 << 10 // data bytes of one subscribe reply's messages
	DefaultMaxReplyMessages  = 1000     // messages in one subscribe reply
	DefaultMaxConnReplyBytes = 1 << 20  // bytes of one connection's subscribe replies built and not yet queued
)

// A Hub is the server side of topics: it serves topic.subscribe and
// topic.unsubscribe (Register), keeps each topic's history in its Store,
// and sends every message published on a topic to its subscribers as a
// topic.message notification.
//
// # What it refuses by default
//
// A Hub serves what the server publishes to the clients that Allow lets
// follow it, and the zero Hub allows nothing: with Allow nil every
// topic.subscribe gets CodeNoSuchTopic. Which topic a connection may read
// is the application's decision (a user's own topic, a room it is a member
// of); the Hub cannot guess it, and a default that served every name would
// let any page read every other user's topics. AllowAll is the open
// behaviour, for topics that are all public. What a client can make the
// Hub hold is bounded whatever Allow says: names (MaxNameBytes), topics per
// connection (MaxConnTopics) and in all (MaxTopics), and what one subscribe
// reply carries (MaxReplyBytes, MaxReplyMessages: a longer catch-up comes
// in pages, the client asking for each). A topic nobody follows is
// released a minute after it became so once its history holds nothing to
// recover (a Memory history empties MaxAge after its last message), by
// one timer per Hub, so that what a client opened does not outlive it for
// long; the minute lets a client that drops and comes back find its topic,
// and its epoch, as it left them.
//
// # Delivery
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
// may arrive before the reply, and every message after the topic's last at
// that read arrives live: nothing falls between them, and the client drops
// the duplicates (Follower does).
//
// Calls on one connection run concurrently: a client sends a topic's
// topic.subscribe after the reply of its topic.unsubscribe (Follower and
// jsonrpc.js do), and its unsubscribe after the reply of a subscribe in
// flight when it has one (jsonrpc.js waits; a subscribe given up on its
// ctx or a timeout has none). When they overlap on the server anyway, an
// unsubscribe that finds a subscribe of the same topic on the same
// connection still in progress answers true and takes effect once that
// subscribe ends: the subscribe replies as it would have, then the
// connection leaves the topic, unless a subscribe of it joined after the
// unsubscribe (the last to reach the Hub wins).
//
// A subscribe reply is counted against its connection's
// MaxConnReplyBytes from before it is built until it is queued for
// writing (hub_budget.go), so that a connection that sends subscribes and
// reads nothing holds a bounded amount however large the messages.
//
// The zero value is a Hub with in-memory history and the default bounds,
// that refuses every subscribe; set its fields before first use. A Hub is
// safe for concurrent use.
type Hub struct {
	// Store keeps the topics' history. Default: a zero Memory (1 MiB and
	// 5 minutes per topic).
	Store Store

	// Allow decides which topics a connection may subscribe to: ctx is
	// the subscribe handler's (jsonrpc.PeerFromContext gives the Peer,
	// and behind ws.Server the upgrade request's values are there). A
	// *jsonrpc.Error it returns goes to the client as it is; any other
	// error as ErrNoSuchTopic (-32001). Default (nil): no topic, every
	// subscribe refused with CodeNoSuchTopic; AllowAll: every topic.
	Allow func(ctx context.Context, topic string) error

	// MaxQueue bounds the messages queued for each subscriber of a topic
	// (jsonrpc.Group.MaxQueue). Default: 256.
	MaxQueue int

	// MaxTopics bounds the topics open at once, by Publish and
	// subscribes together. When it is reached, an open looks at a few of
	// the topics nobody follows (the last to become so, and a few more in
	// turn: a bounded cost per open) and releases those whose history is
	// empty; if none is, a subscribe to another topic gets
	// jsonrpc.CodeOverloaded and a Publish an error wrapping
	// ErrTooManyTopics (the others are released by the Hub's timer).
	// Default: DefaultMaxTopics (10,000); negative: no bound.
	MaxTopics int

	// MaxConnTopics bounds the topics one connection follows; beyond it a
	// subscribe to another gets CodeTooManyTopics. Default:
	// DefaultMaxConnTopics (128); negative: no bound.
	MaxConnTopics int

	// MaxNameBytes bounds a topic's name, in bytes; a longer one (or an
	// empty one) gets jsonrpc.CodeInvalidParams, and Publish fails.
	// Default: DefaultMaxNameBytes (256); negative: no bound.
	MaxNameBytes int

	// MaxReplyBytes and MaxReplyMessages bound the messages one subscribe
	// reply carries (their data, and their number); a catch-up longer
	// than that is paged: the reply says more, and the client subscribes
	// again from its last message (Follower and jsonrpc.js do). A reply
	// carries at least one message. Defaults: DefaultMaxReplyBytes (64
	// KiB) and DefaultMaxReplyMessages (1,000); negative: no bound.
	MaxReplyBytes    int
	MaxReplyMessages int

	// Identity, if set, names the user (or client) behind a connection,
	// from the ctx of each subscribe (where the application put it at
	// sign-in: a ws.Server's upgrade request's values, or a table an
	// RPC sign-in fills, say); never from what the client sends. It is
	// read at every subscribe, before Allow, and kept with that topic's
	// subscription, so a client that signs in after subscribing to a
	// public topic is named on the topics it subscribes to afterwards
	// (TestReviewKickIdentityAfterSignInOverRPC). KickIdentity and
	// presence use it. Default (nil): connections are not told apart.
	Identity func(ctx context.Context) string

	// MaxConnReplyBytes bounds the bytes of one connection's subscribe
	// replies built and not yet queued for writing (where the Peer's
	// Options.MaxOutboundBytes counts them), each counted at twice its
	// encoded size before it is built: a subscribe that finds no room
	// waits (its handler's ctx bounds the wait), and a reply larger than
	// the whole budget goes alone. It is what keeps a connection that
	// sends subscribes and reads nothing from making the server hold one
	// built reply per handler, each as large as the largest message.
	// Default: DefaultMaxConnReplyBytes (1 MiB); negative: no bound.
	MaxConnReplyBytes int

	// Presence, if set, turns presence on for the topics it answers true
	// for: the Hub tracks who (by Identity: a user with three connections
	// is present once, until the last goes) follows them, sends their
	// subscribers topic.presence when identities join or leave, and
	// answers their topic.members (see MethodPresence, MethodMembers,
	// Present). A connection whose Identity is "" follows the topic
	// without being listed. It needs Identity: Register panics without
	// it, and a subscribe to such a topic is refused. Default (nil):
	// presence is off, topic.members refused, and nothing is tracked.
	Presence func(topic string) bool

	// PresenceStore keeps who is present, shared by the Hubs that share
	// it: the cluster module's keeps it in NATS KV for every node.
	// Default: a MemoryPresence of the Hub's own.
	PresenceStore PresenceStore

	// MaxPresence bounds the identities one topic.members reply lists,
	// and each list (joined, left) of one topic.presence; "more" says a
	// list was cut. Default: DefaultMaxPresence (100); negative: no
	// bound.
	MaxPresence int

	// PresenceWindow is how long the presence changes of a topic gather
	// before they go out as one topic.presence, net (an identity that
	// joined and left within it is not sent): the subscribers of a topic
	// get at most one topic.presence per window, however often a client
	// reconnects. Default: DefaultPresenceWindow (250 ms).
	PresenceWindow time.Duration

	// Hook, if set, sees every publish and every delivery to this
	// process's subscribers (the otel module's Telemetry.TopicHook makes
	// them messaging spans, and carries their trace context to the
	// subscribers and, through the cluster module's HistoryStore, to the
	// other nodes). With a Store that is a ContextStore (Memory,
	// cluster.HistoryStore), a delivery gets the context of its publish.
	// Default (nil): nothing is called, and nothing more allocated.
	Hook Hook

	mu      sync.Mutex
	topics  map[string]*hubTopic
	quiet   *list.List    // of *hubTopic: open topics nobody follows or uses now, oldest first
	cursor  *list.Element // in quiet: where sweepAtMax looks next (hub_table.go)
	sweeper *time.Timer   // releases quiet topics (hub_table.go)
	conns   map[*jsonrpc.Peer]*hubConn
	closed  bool
	mem     Memory // the default Store

	pres       map[string]*presTopic // topics with presence that a connection follows (hub_presence.go)
	presMem    MemoryPresence        // the default PresenceStore
	presVer    uint64                // the last presence version this Hub gave (h.mu)
	presCtx    context.Context       // of the background syncs, ended by Close
	presCancel context.CancelFunc
	presWG     sync.WaitGroup // the background syncs
}

// AllowAll is an Allow that lets every connection follow every topic: the
// open behaviour, for an application whose topics are all public.
func AllowAll(context.Context, string) error { return nil }

// Register registers topic.subscribe, topic.unsubscribe and
// topic.members on m. It panics on a Hub with Presence and no Identity,
// which could not tell whose a connection is.
func (h *Hub) Register(m *jsonrpc.Mux) {
	if h.Presence != nil && h.Identity == nil {
		panic("topic: a Hub with Presence needs Identity, to tell whose a connection is")
	}
	jsonrpc.Register(m, MethodSubscribe, h.subscribe)
	jsonrpc.Register(m, MethodUnsubscribe, h.unsubscribe)
	jsonrpc.Register(m, MethodMembers, h.members)
}

// Publish appends data (marshalled with encoding/json; a json.RawMessage
// goes as it is) to the topic's history and sends it to every subscriber,
// on every node for a shared Store. It returns the message's position once
// the Store has it, without waiting for any subscriber.
func (h *Hub) Publish(ctx context.Context, topic string, data any) (Position, error) {
	if err := h.checkName(topic); err != nil {
		return Position{}, fmt.Errorf("topic: cannot publish on %.40q: %w", topic, err)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Position{}, fmt.Errorf("topic: failed to marshal data for %q: %w", topic, err)
	}
	t, err := h.acquire(ctx, topic)
	if err != nil {
		return Position{}, err
	}
	defer h.release(t)
	var done func(Position, error)
	if h.Hook != nil {
		ctx, done = h.Hook.Publish(ctx, topic)
	}
	pos, err := t.log.Append(ctx, raw)
	if done != nil {
		done(pos, err)
	}
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

// Topics returns the number of topics open: followed, in use, or holding
// history that a client could still recover.
func (h *Hub) Topics() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.topics)
}

// Close closes every topic's log, stopping their deliveries, and Leaves
// in the PresenceStore the identities this Hub joined there (within 5 s).
// Publish and topic.subscribe fail afterwards. Close ends no Peer; it returns the
// first error of the logs' Close, and may be called more than once.
func (h *Hub) Close() error {
	h.mu.Lock()
	h.closed = true
	topics := h.topics
	conns := h.conns
	h.topics, h.quiet, h.cursor, h.conns = nil, nil, nil, nil
	for _, c := range conns {
		if c.replyRoom != nil { // wake the subscribes waiting for room: they fail
			close(c.replyRoom)
			c.replyRoom = nil
		}
	}
	if h.sweeper != nil {
		h.sweeper.Stop()
	}
	pres, cancel := h.stopPresence()
	h.mu.Unlock()
	for _, c := range conns {
		c.stop()
	}
	h.closePresence(pres, cancel)
	var errs []error
	for _, t := range topics {
		<-t.ready
		if t.log != nil {
			errs = append(errs, t.log.Close())
		}
	}
	return errors.Join(errs...)
}

// checkName returns an error unless name is a topic name the Hub takes.
func (h *Hub) checkName(name string) error {
	if name == "" {
		return errors.New("the name is empty")
	}
	if max := bound(h.MaxNameBytes, DefaultMaxNameBytes); max >= 0 && len(name) > max {
		return fmt.Errorf("the name is %d bytes long, over the bound of %d (Hub.MaxNameBytes)", len(name), max)
	}
	return nil
}

// bound is a limit's value: def for 0, -1 (none) for a negative one.
func bound(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return -1
	}
	return v
}

// limit is what one subscribe reply may carry.
func (h *Hub) limit() Limit {
	return Limit{Bytes: bound(h.MaxReplyBytes, DefaultMaxReplyBytes), Messages: bound(h.MaxReplyMessages, DefaultMaxReplyMessages)}
}
