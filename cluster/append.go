package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publishing through an election. While JetStream elects a leader for a
// topic's stream (its leader's server stopped or was lost), nobody takes a
// publish: nats.go reports no responders, or the request goes unanswered
// until its ctx ends. Append sends it again until a leader stores it,
// within appendRetryFor. Every attempt carries the same message id
// (Nats-Msg-Id), so that JetStream stores the message once even when an
// attempt was stored and only its ack was lost.

const (
	// appendRetryFor bounds how long Append tries to have one message
	// stored: three of JetStream's election timeouts (each 4 to 9 s at
	// random, so that an election split by a tie is held again), and a
	// publish to a cluster that has lost its quorum for good still fails
	// in bounded time.
	appendRetryFor = 30 * time.Second

	// appendAttempt bounds one attempt's wait for its ack. A stored
	// message is acked within milliseconds; one that nobody took never
	// is, and waiting longer for it only delays the next attempt.
	appendAttempt = 2 * time.Second

	// The wait between attempts, doubling from the first to the last.
	appendBackoffMin = 50 * time.Millisecond
	appendBackoffMax = time.Second
)

// publish has data stored in the topic's stream (see the top of this
// file) and returns JetStream's ack: it stops at the first ack, at an
// error that another attempt would not change, when ctx ends, or after
// appendRetryFor.
func (l *streamLog) publish(ctx context.Context, data []byte) (_ *jetstream.PubAck, err error) {
	start := time.Now()
	var header nats.Header // the hook's, if any
	if hook := l.s.opts.Hook; hook != nil {
		header = nats.Header{}
		var end func(error)
		ctx, end = hook.Start(ctx, OpAppend, l.topic, "", header)
		defer func() { end(err) }()
		boundHeader(header)
	}
	ctx, cancel := context.WithTimeout(ctx, appendRetryFor)
	defer cancel()
	opts := []jetstream.PublishOpt{
		jetstream.WithExpectStream(l.name),
		jetstream.WithMsgID(newMsgID()),
		jetstream.WithRetryAttempts(0), // retried here, within the bound
	}
	wait := appendBackoffMin
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, appendAttempt)
		ack, err := l.attempt(actx, data, header, opts)
		acancel()
		if err == nil {
			return ack, nil
		}
		if !retryable(err) || ctx.Err() != nil {
			if attempt > 1 {
				err = fmt.Errorf("cluster: no leader of stream %s stored the message in %d attempts over %v: %w",
					l.name, attempt, time.Since(start).Round(time.Millisecond), err)
			}
			return nil, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, appendBackoffMax)
	}
}

// attempt publishes data once, with header if there is one. Without, it
// is js.Publish, whose message can stay off the heap.
func (l *streamLog) attempt(ctx context.Context, data []byte, header nats.Header, opts []jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if header == nil {
		return l.js.Publish(ctx, l.subject, data, opts...)
	}
	return l.js.PublishMsg(ctx, &nats.Msg{Subject: l.subject, Data: data, Header: header}, opts...)
}

// newMsgID returns a message id for the attempts at one publish: 96 random
// bits in 16 characters (every byte of it is stored with the message, in
// its Nats-Msg-Id header), unique within any duplicate window.
func newMsgID() string {
	var b [12]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// retryable reports whether another attempt at a publish may succeed: the
// stream had no leader to take it (no responders, no ack in time), an
// earlier attempt is still waiting for a quorum (the next attempt after it
// is stored gets its ack), or JetStream said it is unavailable for now
// (status 503, except that JetStream is not enabled at all).
func retryable(err error) bool {
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch {
	case apiErr.ErrorCode == errCodeMsgIDInProcess:
		return true
	case apiErr.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabled,
		apiErr.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabledForAccount:
		return false
	}
	return apiErr.Code == 503
}

// errCodeMsgIDInProcess is JetStream's answer to a message whose id is that
// of one it has taken and not yet stored ("duplicate message id is in
// process", status 409): an earlier attempt waits for a quorum.
const errCodeMsgIDInProcess jetstream.ErrorCode = 10158

// maxHookHeader bounds the bytes (names and values) of the headers a
// HistoryOptions.Hook adds to a stream message: they count against the
// stream's MaxBytes, the topic's history budget, and may carry what a
// client chose (a tracestate), so that unbounded they would evict the
// history. A W3C traceparent and a short tracestate fit.
const maxHookHeader = 1 << 10

// boundHeader leaves out of header, in the order of their names, each
// header that would take the total past maxHookHeader.
func boundHeader(header nats.Header) {
	size := 0
	for k, vs := range header {
		size += len(k)
		for _, v := range vs {
			size += len(v)
		}
	}
	if size <= maxHookHeader {
		return
	}
	keys := make([]string, 0, len(header))
	for k := range header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	left := maxHookHeader
	for _, k := range keys {
		n := len(k)
		for _, v := range header[k] {
			n += len(v)
		}
		if n > left {
			delete(header, k)
			continue
		}
		left -= n
	}
}
