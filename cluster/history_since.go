package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/peerwire/jsonrpc/topic"
)

const (
	// fetchWait bounds each fetch of a catch-up: a fetch that finds
	// nothing where the stream's state said messages were (they were
	// deleted, or aged out meanwhile) ends the catch-up, not recovered,
	// instead of waiting for messages that will never come.
	fetchWait = 2 * time.Second
	// fetchBatch is the most messages one fetch asks for, with no byte
	// bound to keep to.
	fetchBatch = 1000
	// pageWait bounds a fetch of what fits in a page's bytes left, after
	// its first message: when the next does not fit, the page is full.
	pageWait = 100 * time.Millisecond
)

// Since reads the stream's state and, when since can be recovered, the
// first page of its messages after since. On a topic without a stream it
// answers the absent epoch at seq 0.
func (l *streamLog) Since(ctx context.Context, since *topic.Position, limit topic.Limit) (topic.History, error) {
	st, err := l.js.Stream(ctx, l.name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		l.schedule(0, false) // if the log follows a stream, it was deleted
		h := topic.History{Last: topic.Position{Epoch: absentEpoch}}
		h.Recovered = since != nil && *since == h.Last
		return h, nil
	}
	if err != nil {
		return topic.History{}, err
	}
	info := st.CachedInfo()
	if err := l.s.owns(info, l.topic); err != nil {
		return topic.History{}, err
	}
	if err := l.followed(ctx, info); err != nil {
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
	if since.Seq == last {
		return h, nil
	}
	return l.read(ctx, since.Seq+1, h, limit)
}

// followed makes sure the log follows the stream info describes (a log
// that watched for it, or followed one since deleted, follows it from its
// first message), so that every message after info's last is delivered.
func (l *streamLog) followed(ctx context.Context, info *jetstream.StreamInfo) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errLogClosed
	}
	if info.Created.Equal(l.created) && l.cc != nil {
		return nil
	}
	return l.follow(ctx, info, info.State.FirstSeq)
}

// read reads the messages from seq next on into h, up to h.Last.Seq and
// within limit, with a consumer made for it and deleted after.
func (l *streamLog) read(ctx context.Context, next uint64, h topic.History, limit topic.Limit) (topic.History, error) {
	cons, err := l.js.CreateConsumer(ctx, l.name, jetstream.ConsumerConfig{
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       next,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: consumerIdle, // if the delete below is lost
		MemoryStorage:     true,
		Replicas:          1,
	})
	if err != nil {
		return topic.History{}, err
	}
	defer l.s.deleteConsumer(l.name, cons.CachedInfo().Name)
	last, bytes := h.Last.Seq, 0
	for next <= last {
		if limit.Messages > 0 && len(h.Messages) >= limit.Messages || limit.Bytes > 0 && len(h.Messages) > 0 && bytes >= limit.Bytes {
			h.More = true
			return h, nil
		}
		batch, err := l.fetch(ctx, cons, next, last, limit, bytes, len(h.Messages))
		if err != nil {
			return topic.History{}, err
		}
		got := 0
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return topic.History{}, err
			}
			seq := md.Sequence.Stream
			switch {
			case seq < next || seq > last || got > 0 && full(limit, len(h.Messages), bytes):
				continue // past what this page takes: drained, not kept
			case seq > next:
				// Deleted or aged out since the stream's state was read:
				// what is left no longer reaches back to since.
				return topic.History{Last: h.Last}, nil
			}
			h.Messages = append(h.Messages, topic.Entry{Seq: seq, Data: m.Data()})
			bytes += len(m.Data())
			next++
			got++
		}
		err = batch.Error()
		if got == 0 && limit.Bytes > 0 && len(h.Messages) > 0 {
			h.More = true // the next message does not fit in this page: it starts the next
			return h, nil
		}
		if err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrMaxBytesExceeded) {
			return topic.History{}, err
		}
		if got == 0 {
			// Nothing where the state said messages were, for fetchWait:
			// gone since (a deleted tail, an age limit), not recovered.
			return topic.History{Last: h.Last}, nil
		}
	}
	return h, nil
}

// fetch asks for the next messages: within the page's bytes left when it
// has a byte bound (one message at least), else up to fetchBatch; each
// fetch waits at most fetchWait.
func (l *streamLog) fetch(ctx context.Context, cons jetstream.Consumer, next, last uint64, limit topic.Limit, bytes, n int) (jetstream.MessageBatch, error) {
	wait := fetchWait
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, max(time.Until(d), time.Millisecond))
	}
	count := int(min(last-next+1, fetchBatch))
	if limit.Messages > 0 {
		count = min(count, limit.Messages-n)
	}
	if limit.Bytes > 0 && n > 0 {
		// What fits in the page's bytes left; the server holds a request
		// that nothing more fits until it expires: not for long.
		return cons.FetchBytes(max(limit.Bytes-bytes, 1), jetstream.FetchMaxWait(min(wait, pageWait)))
	}
	if limit.Bytes > 0 {
		count = 1 // the first of a page goes whatever its size; then bytes decide
	}
	return cons.Fetch(count, jetstream.FetchMaxWait(wait))
}

// full reports whether a page of n messages and bytes bytes is full.
func full(limit topic.Limit, n, bytes int) bool {
	return limit.Messages > 0 && n >= limit.Messages || limit.Bytes > 0 && bytes >= limit.Bytes
}
