package cluster

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peerwire/jsonrpc/topic"
)

// Tail reads the stream's state and its last messages: at most n (and
// limit.Messages), read forward from the first of them with a consumer
// made for it, then the oldest dropped until the rest fits in
// limit.Bytes (the newest always stays). What it reads is bounded by
// n and limit.Messages (a subscribe's reply bound, 1,000 by default) and
// by the stream's own limits.
func (l *streamLog) Tail(ctx context.Context, n int, limit topic.Limit) (topic.History, error) {
	st, err := l.js.Stream(ctx, l.name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		l.schedule(0, false)
		return topic.History{Last: topic.Position{Epoch: absentEpoch}}, nil
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
	h := topic.History{Last: topic.Position{Epoch: epochOf(info), Seq: info.State.LastSeq}}
	if limit.Messages > 0 {
		n = min(n, limit.Messages)
	}
	if n <= 0 || info.State.Msgs == 0 {
		return h, nil
	}
	first := max(info.State.FirstSeq, h.Last.Seq-min(uint64(n), h.Last.Seq)+1)
	h, err = l.read(ctx, first, h, topic.Limit{Messages: n})
	if err != nil {
		return topic.History{}, err
	}
	h.More = false
	bytes, keep := 0, len(h.Messages)
	for i := len(h.Messages) - 1; i >= 0; i-- {
		if keep < len(h.Messages) && limit.Bytes > 0 && bytes+len(h.Messages[i].Data) > limit.Bytes {
			break
		}
		bytes += len(h.Messages[i].Data)
		keep = i
	}
	h.Messages = h.Messages[keep:]
	return h, nil
}
