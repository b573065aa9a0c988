package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"encoding/json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/peerwire/jsonrpc/topic"
)

// streamLog is one topic's history on one node: the topic's stream, while
// it has one, followed by a consumer of the node's (history_follow.go),
// or, while it has none, a watch on its subject for the first message.
// Its state moves under mu between three: absent (created zero, epoch
// absentEpoch, sub set), following a stream (created, epoch, cc set), and
// closed.
type streamLog struct {
	s       *HistoryStore
	js      jetstream.JetStream
	topic   string // the topic's name
	name    string // the stream's
	subject string
	deliver func(topic.Position, json.RawMessage)
	// deliverCtx, set instead of deliver by OpenContext, gets each
	// message's context (HistoryOptions.Hook, OpFollow).
	deliverCtx func(context.Context, topic.Position, json.RawMessage)
	ctx        context.Context // ended by Close: checks in flight give up
	end        context.CancelFunc

	mu        sync.Mutex
	closed    bool
	created   time.Time                // the followed stream's creation; zero while there is none
	epoch     string                   // epochOf it, or absentEpoch
	high      uint64                   // the highest seq delivered or acknowledged in epoch
	delivered uint64                   // the last seq delivered
	gen       int                      // which consumer (or watch) is current: older ones' messages are dropped
	consumer  string                   // its name
	cc        jetstream.ConsumeContext // its consumption
	sub       *nats.Subscription       // the watch, while there is no stream
	check     *time.Timer              // a check scheduled (history_follow.go)
	refollow  bool                     // it follows the stream anew even if it is the same
	checks    sync.WaitGroup           // checks scheduled or running
}

// ensure makes the topic's stream if the log has none, and follows it
// from its first message, so that subscribers who got the absent epoch
// learn of the new one.
func (l *streamLog) ensure(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errLogClosed
	}
	if !l.created.IsZero() {
		return nil
	}
	st, err := l.js.CreateOrUpdateStream(ctx, l.s.config(l))
	if err != nil {
		return fmt.Errorf("cluster: failed to make the stream of topic %q: %w", l.topic, err)
	}
	info := st.CachedInfo()
	if err := l.s.owns(info, l.topic); err != nil {
		return err
	}
	return l.follow(ctx, info, info.State.FirstSeq)
}

// missing looks into a publish that failed: a stream deleted under the log
// is made again by the next Append.
func (l *streamLog) missing(err error) {
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrStreamNotFound) {
		l.schedule(0, false)
	}
}

// epochAt returns the epoch of an acknowledged seq: the log's, unless seq
// is not above what the log has seen, which a stream made again would
// give (then the stream says).
func (l *streamLog) epochAt(ctx context.Context, seq uint64) string {
	l.mu.Lock()
	if seq > l.high {
		l.high = seq
		defer l.mu.Unlock()
		return l.epoch
	}
	epoch := l.epoch
	l.mu.Unlock()
	if st, err := l.js.Stream(ctx, l.name); err == nil && epochOf(st.CachedInfo()) != epoch {
		l.schedule(0, false)
		return epochOf(st.CachedInfo())
	}
	return epoch
}

// Idle reports true: the history is in JetStream, and closing the log
// loses none of it.
func (l *streamLog) Idle() bool { return true }

// Close stops following the stream, and deletes the node's consumer
// without waiting for NATS (it expires on the server if the delete is
// lost); the stream stays, with its history.
func (l *streamLog) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.unfollow()
	l.end()
	if l.check != nil && l.check.Stop() {
		l.checks.Done()
	}
	l.mu.Unlock()
	l.checks.Wait() // a check in flight sees done and returns
	return nil
}

var errLogClosed = errors.New("cluster: topic log closed")
