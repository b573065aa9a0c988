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
// a stream deleted and made again starts a new epoch, and one that
// survives a server's restart (file storage) keeps it. Each node follows
// each open topic's stream with an ordered consumer (which nats.go makes
// again after a reconnection, from where it was) and hands its messages to
// its own subscribers; a subscribe's catch-up reads the stream with a
// short-lived consumer. Publishing needs JetStream: a node cut off from
// NATS cannot publish (Hub.Publish fails), and its subscribers get what
// was published meanwhile when it is back.
//
// A stream per topic suits a few topics with many subscribers (a board, a
// room); thousands of topics are thousands of streams.
type HistoryStore struct {
	js     jetstream.JetStream
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
	return &HistoryStore{js: js, opts: o, prefix: o.Prefix + ".history.",
		stream: strings.ReplaceAll(o.Prefix, ".", "_") + "_history_"}, nil
}

// Open makes the topic's stream if there is none (or updates its limits),
// and follows it from its end.
func (s *HistoryStore) Open(ctx context.Context, name string, deliver func(topic.Position, json.RawMessage)) (topic.Log, error) {
	tok := token(name)
	storage := jetstream.FileStorage
	if s.opts.Memory {
		storage = jetstream.MemoryStorage
	}
	replicas := s.opts.Replicas
	if replicas == 0 {
		replicas = 1
		if s.js.Conn().ConnectedClusterName() != "" {
			replicas = 3
		}
	}
	cfg := jetstream.StreamConfig{
		Name:        s.stream + tok,
		Subjects:    []string{s.prefix + tok},
		Storage:     storage,
		Replicas:    replicas,
		MaxBytes:    s.opts.MaxBytes,
		MaxAge:      s.opts.MaxAge,
		Discard:     jetstream.DiscardOld,
		AllowDirect: true,
	}
	st, err := s.js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: failed to make the stream of topic %q: %w", name, err)
	}
	info := st.CachedInfo()
	l := &streamLog{js: s.js, stream: st, name: cfg.Name, subject: cfg.Subjects[0], epoch: epochOf(info)}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   info.State.LastSeq + 1,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: failed to follow the stream of topic %q: %w", name, err)
	}
	epoch := l.epoch
	l.cc, err = cons.Consume(func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil || deliver == nil {
			return
		}
		deliver(topic.Position{Epoch: epoch, Seq: md.Sequence.Stream}, m.Data())
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: failed to follow the stream of topic %q: %w", name, err)
	}
	return l, nil
}

// epochOf is a stream's epoch: its creation time, which a stream made
// again does not share.
func epochOf(info *jetstream.StreamInfo) string {
	return strconv.FormatInt(info.Created.UnixNano(), 36)
}

// streamLog is one topic's stream.
type streamLog struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	name    string
	subject string
	epoch   string
	cc      jetstream.ConsumeContext
}

// Append publishes data on the topic's subject and returns its position
// once JetStream has stored it.
func (l *streamLog) Append(ctx context.Context, data json.RawMessage) (topic.Position, error) {
	ack, err := l.js.Publish(ctx, l.subject, data, jetstream.WithExpectStream(l.name))
	if err != nil {
		return topic.Position{}, err
	}
	return topic.Position{Epoch: l.epoch, Seq: ack.Sequence}, nil
}

// catchUpBatch is how many messages each fetch of a catch-up asks for.
const catchUpBatch = 1000

// Since reads the stream's state and, when since can be recovered, its
// messages after since.
func (l *streamLog) Since(ctx context.Context, since *topic.Position, limit topic.Limit) (topic.History, error) {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return topic.History{}, err
	}
	first, last := info.State.FirstSeq, info.State.LastSeq
	h := topic.History{Last: topic.Position{Epoch: epochOf(info), Seq: last}}
	if info.State.Msgs == 0 {
		first = last + 1
	}
	if since == nil || since.Epoch != h.Last.Epoch || since.Seq > last || since.Seq+1 < first {
		return h, nil
	}
	h.Recovered = true
	h.Messages = make([]topic.Entry, 0, last-since.Seq)
	if since.Seq == last {
		return h, nil
	}
	cons, err := l.js.CreateConsumer(ctx, l.name, jetstream.ConsumerConfig{
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       since.Seq + 1,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: time.Minute, // if the delete below is lost
		MemoryStorage:     true,
		Replicas:          1,
	})
	if err != nil {
		return topic.History{}, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = l.js.DeleteConsumer(dctx, l.name, cons.CachedInfo().Name)
	}()
	next := since.Seq + 1
	bytes := 0
	for next <= last {
		if limit.Messages > 0 && len(h.Messages) >= limit.Messages || limit.Bytes > 0 && len(h.Messages) > 0 && bytes >= limit.Bytes {
			h.More = true
			break
		}
		batch, err := cons.Fetch(int(min(last-next+1, catchUpBatch)), jetstream.FetchContext(ctx))
		if err != nil {
			return topic.History{}, err
		}
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return topic.History{}, err
			}
			if seq := md.Sequence.Stream; seq == next {
				h.Messages = append(h.Messages, topic.Entry{Seq: seq, Data: m.Data()})
				bytes += len(m.Data())
				next++
			} else if seq > next {
				// Expired or removed since Info: what is left no longer
				// reaches back to since.
				return topic.History{Last: h.Last}, nil
			}
		}
		if err := batch.Error(); err != nil {
			return topic.History{}, err
		}
	}
	return h, nil
}

// Idle reports true: the history is in JetStream, and closing the log
// loses none of it.
func (l *streamLog) Idle() bool { return true }

// Close stops following the stream; the stream stays, with its history.
func (l *streamLog) Close() error {
	l.cc.Stop()
	return nil
}
