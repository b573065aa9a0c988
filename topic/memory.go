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
// Messages beyond a bound are dropped oldest first, when a message is
// appended and when history is read; a client whose position is older
// than the oldest message kept gets recovered false. The zero value uses
// the defaults.
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
	l := &memLog{maxBytes: m.MaxBytes, maxAge: m.MaxAge, deliver: deliver, epoch: rand.Text()}
	if l.maxBytes == 0 {
		l.maxBytes = DefaultMaxBytes
	}
	if l.maxAge == 0 {
		l.maxAge = DefaultMaxAge
	}
	return l, nil
}

// memLog is a Memory topic's history.
type memLog struct {
	maxBytes int
	maxAge   time.Duration
	deliver  func(Position, json.RawMessage)

	mu      sync.Mutex // held while delivering, so deliveries are in seq order
	epoch   string
	last    uint64
	entries []memEntry // seqs last-len(entries)+1 .. last
	size    int        // charged bytes of entries
}

type memEntry struct {
	at   time.Time
	data json.RawMessage
}

// Append stores data, drops what the bounds no longer hold, and delivers.
func (l *memLog) Append(_ context.Context, data json.RawMessage) (Position, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last++
	l.entries = append(l.entries, memEntry{at: now, data: data})
	l.size += len(data) + entryOverhead
	l.trim(now)
	pos := Position{Epoch: l.epoch, Seq: l.last}
	if l.deliver != nil {
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
}

// Since returns the messages after since, if they are all still held.
func (l *memLog) Since(_ context.Context, since *Position) (History, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trim(time.Now())
	h := History{Last: Position{Epoch: l.epoch, Seq: l.last}}
	first := l.last + 1 - uint64(len(l.entries)) // the oldest seq held
	if since == nil || since.Epoch != l.epoch || since.Seq > l.last || since.Seq+1 < first {
		return h, nil
	}
	h.Recovered = true
	h.Messages = make([]Entry, 0, l.last-since.Seq)
	for i := since.Seq + 1 - first; i < uint64(len(l.entries)); i++ {
		h.Messages = append(h.Messages, Entry{Seq: first + i, Data: l.entries[i].data})
	}
	return h, nil
}

// Close does nothing: a memory log holds no goroutine.
func (l *memLog) Close() error { return nil }
