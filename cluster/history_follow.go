package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/peerwire/jsonrpc/topic"
)

// How a node follows a topic's stream: a consumer of its own (AckNone,
// in memory, one copy), whose messages it delivers in seq order, once
// each; or, while the topic has no stream, a plain subscription to its
// subject, whose first message makes it look for the stream. Whenever the
// consumer reports trouble (deleted, no heartbeat, no responders) or a
// publish finds no stream, the node looks at the stream (a check, on a
// timer, never holding up NATS's goroutines): gone, it watches for it
// again; made again (another creation time), it follows the new stream
// from its first message, in its new epoch, so that its subscribers reset
// rather than read the new stream's seqs as the old one's; the same, it
// follows it again from the last seq delivered if the consumer was lost.
// A check that cannot reach JetStream is made again a second later, until
// the log closes.

const (
	// consumerIdle is how long the server keeps a consumer nobody pulls
	// from: the bound on one whose delete was lost.
	consumerIdle = 30 * time.Second
	// checkTimeout bounds each look at the stream.
	checkTimeout = 2 * time.Second
	// checkAgain is how soon a check that failed is made again.
	checkAgain = time.Second
)

// follow follows the stream info describes from seq from, with a new
// consumer, in place of what the log followed or watched. l.mu held.
func (l *streamLog) follow(ctx context.Context, info *jetstream.StreamInfo, from uint64) error {
	from = max(from, 1)
	cons, err := l.js.CreateConsumer(ctx, l.name, jetstream.ConsumerConfig{
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: consumerIdle,
	})
	if err != nil {
		return err
	}
	l.unfollow()
	gen := l.gen
	cc, err := cons.Consume(func(m jetstream.Msg) { l.onMessage(gen, m) },
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) { l.onError(gen, err) }))
	if err != nil {
		l.s.deleteConsumer(l.name, cons.CachedInfo().Name)
		return err
	}
	if !info.Created.Equal(l.created) {
		l.created, l.epoch, l.high = info.Created, epochOf(info), 0
	}
	l.cc, l.consumer = cc, cons.CachedInfo().Name
	l.delivered = from - 1
	l.high = max(l.high, l.delivered)
	return nil
}

// unfollow stops the consumer or the watch, whichever the log has, and
// drops what they still bring. l.mu held.
func (l *streamLog) unfollow() {
	if l.cc != nil {
		l.cc.Stop()
		l.s.deleteConsumer(l.name, l.consumer)
		l.cc, l.consumer = nil, ""
	}
	if l.sub != nil {
		l.sub.Unsubscribe()
		l.sub = nil
	}
	l.gen++
}

// watch waits for the topic's stream: a subscription to its subject,
// registered with the server before the stream is looked for once more,
// so that no first message falls between. l.mu held.
func (l *streamLog) watch(ctx context.Context) error {
	l.unfollow()
	l.created, l.epoch, l.high, l.delivered = time.Time{}, absentEpoch, 0, 0
	sub, err := l.s.nc.Subscribe(l.subject, func(*nats.Msg) { l.schedule(0, false) })
	if err != nil {
		return err
	}
	l.sub = sub
	fctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if err := l.s.nc.FlushWithContext(fctx); err != nil {
		return err
	}
	st, err := l.js.Stream(ctx, l.name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil
	case err != nil:
		return err
	}
	info := st.CachedInfo()
	if err := l.s.owns(info, l.topic); err != nil {
		return err
	}
	return l.follow(ctx, info, info.State.FirstSeq)
}

// onMessage delivers a message of the consumer of generation gen, once,
// in seq order, with the epoch of the stream followed.
func (l *streamLog) onMessage(gen int, m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	seq := md.Sequence.Stream
	if gen != l.gen || l.closed || seq <= l.delivered {
		return
	}
	l.delivered = seq
	l.high = max(l.high, seq)
	pos := topic.Position{Epoch: l.epoch, Seq: seq}
	switch {
	case l.deliverCtx != nil:
		l.deliverFollowed(pos, m)
	case l.deliver != nil:
		l.deliver(pos, m.Data())
	}
}

// deliverFollowed hands m to deliverCtx, with the context the store's
// hook reads from its headers. l.mu held.
func (l *streamLog) deliverFollowed(pos topic.Position, m jetstream.Msg) {
	hook := l.s.opts.Hook
	if hook == nil {
		l.deliverCtx(context.Background(), pos, m.Data())
		return
	}
	ctx, end := hook.Start(context.Background(), OpFollow, l.topic, "", m.Headers())
	l.deliverCtx(ctx, pos, m.Data())
	end(nil)
}

// onError looks at the stream when the consumer reports it may be lost.
// It runs on nats.go's goroutine: it only schedules the check.
func (l *streamLog) onError(gen int, err error) {
	if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, nats.ErrNoResponders) {
		l.mu.Lock()
		current := gen == l.gen
		l.mu.Unlock()
		if current {
			l.schedule(0, true)
		}
	}
}

// schedule has the stream checked in d, unless a check is scheduled
// already; refollow: even if it is the same stream, follow it anew.
func (l *streamLog) schedule(d time.Duration, refollow bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refollow = l.refollow || refollow
	if l.closed || l.check != nil {
		return
	}
	l.checks.Add(1)
	l.check = time.AfterFunc(d, l.runCheck)
}

// runCheck looks at the stream and follows what it finds (see above).
func (l *streamLog) runCheck() {
	defer l.checks.Done()
	ctx, cancel := context.WithTimeout(l.ctx, checkTimeout)
	defer cancel()
	st, err := l.js.Stream(ctx, l.name)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.check = nil
	if l.closed {
		return
	}
	refollow := l.refollow
	l.refollow = false
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if l.sub == nil {
			err = l.watch(ctx)
		}
	case err == nil:
		info := st.CachedInfo()
		switch {
		case !info.Created.Equal(l.created):
			err = l.follow(ctx, info, info.State.FirstSeq) // made again, or made at last: a new epoch
		case refollow || l.cc == nil:
			err = l.follow(ctx, info, l.delivered+1)
		}
	}
	if err != nil {
		l.refollow = l.refollow || refollow
		l.checks.Add(1)
		l.check = time.AfterFunc(checkAgain, l.runCheck)
	}
}

// deleteConsumer deletes a consumer of stream without waiting for the
// answer: it expires anyway after consumerIdle.
func (s *HistoryStore) deleteConsumer(stream, name string) {
	if name == "" {
		return
	}
	_ = s.nc.PublishRequest(jetstream.DefaultAPIPrefix+"CONSUMER.DELETE."+stream+"."+name, s.nc.NewRespInbox(), nil)
}
