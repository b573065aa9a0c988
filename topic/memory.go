package topic

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"sync"
	"time"
)

// Defaults of Memory's bounds.
const (
	DefaultMaxBytes = 1 << 20         // 1 MiB of history per topic
	DefaultMaxAge   = 5 * time.Minute // messages older than this are dropped
)

// entryOverhead is what each message is charged in Memory's byte bound
// besides its data: its seq, its time and its slice header.
const entryOverhead = 64

// Memory is a Store that keeps each topic's history in this process,
// bounded in bytes and in age; it is lost with the process, and each log
// it opens has an epoch of its own, random (crypto/rand), so a client's
// position from an earlier process is never taken for one of this one.
//
// Messages beyond the byte bound are dropped oldest first as messages are
// appended; messages older than MaxAge are dropped on time, by one timer
// per log that holds messages (armed for its oldest message, none while
// the log is empty), so an idle topic's history is freed MaxAge after its
// last message even if nothing else happens. A client whose position is
// older than the oldest message kept gets recovered false. The zero value
// uses the defaults.
type Memory struct {
	// MaxBytes bounds each topic's history: the messages' data plus 64
	// bytes each. Default: DefaultMaxBytes (1 MiB); negative: no bound.
	MaxBytes int
	// MaxAge drops messages older than it. Default: DefaultMaxAge (5
	// minutes); negative: no bound.
	MaxAge time.Duration
}

// Open returns a new, empty log with a new epoch.
func (m *Memory) Open(_ context.Context, _ string, deliver func(Position, json.RawMessage)) (Log, error) {
	return m.open(deliver, nil), nil
}

// OpenContext is Open with a deliver that gets, with each message, the
// ctx its Append was given (Append delivers before it returns).
func (m *Memory) OpenContext(_ context.Context, _ string, deliver func(context.Context, Position, json.RawMessage)) (Log, error) {
	return m.open(nil, deliver), nil
}

func (m *Memory) open(deliver func(Position, json.RawMessage), deliverCtx func(context.Context, Position, json.RawMessage)) *memLog {
	l := &memLog{maxBytes: m.MaxBytes, maxAge: m.MaxAge, deliver: deliver, deliverCtx: deliverCtx, epoch: rand.Text()}
	if l.maxBytes == 0 {
		l.maxBytes = DefaultMaxBytes
	}
	if l.maxAge == 0 {
		l.maxAge = DefaultMaxAge
	}
	return l
}

// memLog is a Memory topic's history.
type memLog struct {
	maxBytes int
	maxAge   time.Duration
	deliver  func(Position, json.RawMessage)
	// deliverCtx, set instead of deliver by OpenContext, gets Append's ctx.
	deliverCtx func(context.Context, Position, json.RawMessage)

	mu      sync.Mutex // held while delivering, so deliveries are in seq order
	epoch   string
	last    uint64
	entries []memEntry  // seqs last-len(entries)+1 .. last
	size    int         // charged bytes of entries
	expiry  *time.Timer // armed for the oldest entry while there is one (maxAge > 0)
	closed  bool
}

type memEntry struct {
	at   time.Time
	data json.RawMessage
}

// Append stores data, drops what the bounds no longer hold, and delivers.
func (l *memLog) Append(ctx context.Context, data json.RawMessage) (Position, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last++
	l.entries = append(l.entries, memEntry{at: now, data: data})
	l.size += len(data) + entryOverhead
	l.trim(now)
	l.arm(now)
	pos := Position{Epoch: l.epoch, Seq: l.last}
	switch {
	case l.deliverCtx != nil:
		l.deliverCtx(ctx, pos, data)
	case l.deliver != nil:
		l.deliver(pos, data)
	}
	return pos, nil
}

// trim drops the oldest entries while the history is over a bound.
func (l *memLog) trim(now time.Time) {
	drop := 0
	for drop < len(l.entries) {
		e := l.entries[drop]
		over := l.maxBytes >= 0 && l.size > l.maxBytes
		old := l.maxAge >= 0 && now.Sub(e.at) > l.maxAge
		if !over && !old {
			break
		}
		l.size -= len(e.data) + entryOverhead
		l.entries[drop] = memEntry{}
		drop++
	}
	l.entries = l.entries[drop:]
	if len(l.entries) == 0 {
		l.entries = nil // the array too
	}
}

// arm makes sure the expiry timer is set while the log holds entries.
func (l *memLog) arm(now time.Time) {
	if l.maxAge < 0 || l.expiry != nil || len(l.entries) == 0 || l.closed {
		return
	}
	l.expiry = time.AfterFunc(l.entries[0].at.Add(l.maxAge).Sub(now)+time.Millisecond, l.expire)
}

// expire runs on the expiry timer: it drops what is older than maxAge,
// and arms the timer again for the oldest entry left.
func (l *memLog) expire() {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expiry = nil
	l.trim(now)
	l.arm(now)
}

// Since returns the first messages after since, if they are all still held.
func (l *memLog) Since(_ context.Context, since *Position, limit Limit) (History, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trim(time.Now())
	h := History{Last: Position{Epoch: l.epoch, Seq: l.last}}
	first := l.last + 1 - uint64(len(l.entries)) // the oldest seq held
	if since == nil || since.Epoch != l.epoch || since.Seq > l.last || since.Seq+1 < first {
		return h, nil
	}
	h.Recovered = true
	bytes := 0
	for i := since.Seq + 1 - first; i < uint64(len(l.entries)); i++ {
		data := l.entries[i].data
		if len(h.Messages) > 0 && (limit.Messages > 0 && len(h.Messages) >= limit.Messages ||
			limit.Bytes > 0 && bytes+len(data) > limit.Bytes) {
			h.More = true
			break
		}
		h.Messages = append(h.Messages, Entry{Seq: first + i, Data: data})
		bytes += len(data)
	}
	return h, nil
}

// Tail returns the newest messages, at most n, within limit.
func (l *memLog) Tail(_ context.Context, n int, limit Limit) (History, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trim(time.Now())
	h := History{Last: Position{Epoch: l.epoch, Seq: l.last}}
	if limit.Messages > 0 {
		n = min(n, limit.Messages)
	}
	n = min(n, len(l.entries))
	start, bytes := len(l.entries), 0
	for i := len(l.entries) - 1; i >= len(l.entries)-n; i-- {
		size := len(l.entries[i].data)
		if start < len(l.entries) && limit.Bytes > 0 && bytes+size > limit.Bytes {
			break
		}
		start, bytes = i, bytes+size
	}
	first := l.last + 1 - uint64(len(l.entries)) // the seq of entries[0]
	for i := start; i < len(l.entries); i++ {
		h.Messages = append(h.Messages, Entry{Seq: first + uint64(i), Data: l.entries[i].data})
	}
	return h, nil
}

// Idle reports whether the log holds no message.
func (l *memLog) Idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trim(time.Now())
	return len(l.entries) == 0
}

// Close stops the expiry timer and drops the history.
func (l *memLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.expiry != nil {
		l.expiry.Stop()
		l.expiry = nil
	}
	l.entries, l.size = nil, 0
	return nil
}
