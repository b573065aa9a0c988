package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/peerwire/jsonrpc/topic"
)

// HistoryOptions configure a HistoryStore. The zero value gives the
// defaults each field documents.
type HistoryOptions struct {
	// Prefix starts the subjects and stream names: topic name's history
	// is the stream <Prefix, dots as underscores>_history_<name> on the
	// subject <Prefix>.history.<name> (name encoded as a subject token).
	// Default: "jsonrpc".
	Prefix string

	// Replicas is each stream's number of copies, so that a server's
	// loss or restart loses nothing. Default: 3 when the connection is to
	// a NATS cluster (nats.Conn.ConnectedClusterName is set) as the
	// topic's stream is made, else 1.
	Replicas int

	// MaxBytes bounds each topic's stream (JetStream's MaxBytes; the
	// oldest messages go first). Default: topic.DefaultMaxBytes (1 MiB);
	// negative: no bound.
	MaxBytes int64

	// MaxAge drops messages older than it (JetStream's MaxAge). Default:
	// topic.DefaultMaxAge (5 minutes); negative: no bound.
	MaxAge time.Duration

	// Memory keeps the streams in the NATS servers' memory rather than in
	// files: lost when a server restarts. Default: false (file storage).
	Memory bool

	// Hook, if set, carries the context of each Append (a topic.Hub's
	// publish, whose Hub.Hook spans it) in the stream message's headers
	// (OpAppend), and gives each delivery, on every node, the context it
	// reads back from them (OpFollow) through OpenContext (the otel
	// module's Telemetry.ClusterHook: the W3C trace context). The headers
	// it adds count against MaxBytes, so they are bounded at 1 KiB (names
	// and values): a header that would pass it is left out
	// (TestHistoryHookHeadersDoNotEvictHistory). Default (nil): messages
	// carry no header of the store's but Nats-Msg-Id, and nothing is
	// called.
	Hook Hook
}

// A HistoryStore is a topic.Store that keeps each topic's history in a
// JetStream stream of its own, shared by every node: a topic.Hub on each
// node with the same HistoryStore options serves the same topics, a
// message published on any node reaches the subscribers of every node, and
// a client that reconnects to another node recovers from the stream what it
// missed.
//
// A topic's positions are the stream's sequences, dense per topic since the
// stream holds only that topic; the epoch is the stream's creation time, so
// a stream deleted and made again starts a new epoch, on every node that
// has the topic open (its subscribers reset), and one that survives a
// server's restart (file storage) keeps it. Each node follows each open
// topic's stream with an ordered consumer (which nats.go makes again after
// a reconnection, from where it was) and hands its messages to its own
// subscribers; a subscribe's catch-up reads the stream with a short-lived
// consumer, a page at a time (topic.Hub.MaxReplyBytes), each fetch waiting
// at most a second. Publishing needs JetStream: a node cut off from NATS
// cannot publish (Hub.Publish fails), and its subscribers get what was
// published meanwhile when it is back. A publish made while a topic's
// stream has no leader (JetStream electing one after a server's loss) is
// sent again until a leader stores it, once, for at most 30 s (three of
// JetStream's election timeouts) or until its ctx ends
// (TestPublishRetriedThroughElection); only then does Hub.Publish fail,
// and even then an attempt may yet be stored. Once means within the
// stream's duplicate window (JetStream's: 2 minutes, or MaxAge if that is
// shorter).
//
// Only a publish makes a stream: a subscribe to a topic that has none
// makes nothing in JetStream (its reply has the epoch "none" and seq 0,
// and the node watches the topic's subject, with a plain NATS
// subscription, for the stream's first message, after which its
// subscribers reset to the new stream). The consumers a node makes are
// deleted when it closes the topic (the Hub releases a topic nobody
// follows), and expire on the server 30 s after their node stopped using
// them if that delete is lost.
//
// Topic names may be any string: the stream name and subject hold the
// name encoded (see cluster's doc), or, when that would pass JetStream's
// 255 characters, a SHA-256 of it, the name itself then kept in the
// stream's metadata and checked on every open.
//
// A stream per topic suits a few topics with many subscribers (a board, a
// room); thousands of topics are thousands of streams.
type HistoryStore struct {
	js     jetstream.JetStream
	nc     *nats.Conn
	opts   HistoryOptions
	prefix string // the subject prefix, with its trailing "."
	stream string // the stream name prefix
}

// NewHistoryStore returns a HistoryStore on nc, configured by opts (at most
// one). The caller owns nc, as for New.
func NewHistoryStore(nc *nats.Conn, opts ...HistoryOptions) (*HistoryStore, error) {
	if nc == nil {
		return nil, errors.New("cluster: nil *nats.Conn")
	}
	if len(opts) > 1 {
		return nil, errors.New("cluster: more than one HistoryOptions")
	}
	var o HistoryOptions
	if len(opts) == 1 {
		o = opts[0]
	}
	prefix := Options{Prefix: o.Prefix}
	if err := prefix.fill(); err != nil {
		return nil, err
	}
	o.Prefix = prefix.Prefix
	o.Replicas = max(o.Replicas, 0)
	switch {
	case o.MaxBytes == 0:
		o.MaxBytes = topic.DefaultMaxBytes
	case o.MaxBytes < 0:
		o.MaxBytes = -1
	}
	switch {
	case o.MaxAge == 0:
		o.MaxAge = topic.DefaultMaxAge
	case o.MaxAge < 0:
		o.MaxAge = 0 // JetStream: no limit
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: failed to use JetStream: %w", err)
	}
	return &HistoryStore{js: js, nc: nc, opts: o, prefix: o.Prefix + ".history.",
		stream: strings.ReplaceAll(o.Prefix, ".", "_") + "_history_"}, nil
}

// Open returns the log of the topic called name: following its stream
// from its end if there is one, else watching for its first message. It
// makes nothing in JetStream: the first Append makes the stream.
func (s *HistoryStore) Open(ctx context.Context, name string, deliver func(topic.Position, json.RawMessage)) (topic.Log, error) {
	return s.open(ctx, name, &streamLog{deliver: deliver})
}

// OpenContext is Open with a deliver that gets, with each message, the
// context HistoryOptions.Hook reads from the message's headers (OpFollow;
// context.Background() without a Hook): a topic.Hub with a Hook uses it,
// so that a delivery on any node has the context of its publish.
func (s *HistoryStore) OpenContext(ctx context.Context, name string, deliver func(context.Context, topic.Position, json.RawMessage)) (topic.Log, error) {
	return s.open(ctx, name, &streamLog{deliverCtx: deliver})
}

// open opens l, which has its deliver or deliverCtx set, as the log of
// name.
func (s *HistoryStore) open(ctx context.Context, name string, l *streamLog) (topic.Log, error) {
	tok := s.token(name)
	l.s, l.js, l.topic, l.name, l.subject, l.epoch = s, s.js, name, s.stream+tok, s.prefix+tok, absentEpoch
	l.ctx, l.end = context.WithCancel(context.Background())
	st, err := s.js.Stream(ctx, l.name)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		err = l.watch(ctx)
	case err == nil:
		info := st.CachedInfo()
		if err = s.owns(info, name); err == nil {
			err = l.follow(ctx, info, info.State.LastSeq+1)
		}
	}
	if err != nil {
		l.end()
		l.unfollow()
		return nil, fmt.Errorf("cluster: failed to open the history of topic %q: %w", name, err)
	}
	return l, nil
}

// config is the stream config of a topic, with the store's options.
func (s *HistoryStore) config(l *streamLog) jetstream.StreamConfig {
	storage := jetstream.FileStorage
	if s.opts.Memory {
		storage = jetstream.MemoryStorage
	}
	replicas := s.opts.Replicas
	if replicas == 0 {
		replicas = 1
		if s.nc.ConnectedClusterName() != "" {
			replicas = 3
		}
	}
	return jetstream.StreamConfig{
		Name:        l.name,
		Subjects:    []string{l.subject},
		Storage:     storage,
		Replicas:    replicas,
		MaxBytes:    s.opts.MaxBytes,
		MaxAge:      s.opts.MaxAge,
		Discard:     jetstream.DiscardOld,
		AllowDirect: true,
		Metadata:    map[string]string{metaTopic: l.topic},
	}
}

// epochOf is a stream's epoch: its creation time, which a stream made
// again does not share.
func epochOf(info *jetstream.StreamInfo) string {
	return strconv.FormatInt(info.Created.UnixNano(), 36)
}

// absentEpoch is the epoch of a topic that has no stream (yet): a
// position of it recovers nothing but itself, at seq 0. Real epochs are
// longer (base 36 of a time in nanoseconds).
const absentEpoch = "none"

// Append publishes data on the topic's subject, making the topic's stream
// first if it has none, and returns its position once JetStream has stored
// it. A publish that no stream leader takes (as during an election) is
// sent again until one stores it, for at most 30 s (appendRetryFor) or
// until ctx ends; it is stored once (see publish).
func (l *streamLog) Append(ctx context.Context, data json.RawMessage) (topic.Position, error) {
	if err := l.ensure(ctx); err != nil {
		return topic.Position{}, err
	}
	ack, err := l.publish(ctx, data)
	if err != nil {
		l.missing(err)
		return topic.Position{}, err
	}
	return topic.Position{Epoch: l.epochAt(ctx, ack.Sequence), Seq: ack.Sequence}, nil
}
