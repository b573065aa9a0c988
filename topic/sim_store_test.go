package topic_test

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/peerwire/jsonrpc/topic"
)

// tsimStore is the simulation's Store: Memory logs, each of which can be
// made to start a new epoch under the Hub that holds it (as a JetStream
// stream deleted and made again), and which tell the checks where each
// open topic stands.
type tsimStore struct {
	mem  topic.Memory
	mu   sync.Mutex
	open map[string]*tsimLog // the log of each topic the Hub has open
}

func (s *tsimStore) Open(ctx context.Context, name string, deliver func(topic.Position, json.RawMessage)) (topic.Log, error) {
	inner, err := s.mem.Open(ctx, name, deliver)
	if err != nil {
		return nil, err
	}
	l := &tsimLog{s: s, name: name, deliver: deliver, inner: inner}
	s.mu.Lock()
	if s.open == nil {
		s.open = make(map[string]*tsimLog)
	}
	s.open[name] = l
	s.mu.Unlock()
	return l, nil
}

// log returns the open log of name, or nil.
func (s *tsimStore) log(name string) *tsimLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[name]
}

// opened returns how many logs are open.
func (s *tsimStore) opened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

type tsimLog struct {
	s       *tsimStore
	name    string
	deliver func(topic.Position, json.RawMessage)
	mu      sync.Mutex // held across Append, so an epoch change falls between two messages
	inner   topic.Log
}

func (l *tsimLog) Append(ctx context.Context, data json.RawMessage) (topic.Position, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inner.Append(ctx, data)
}

func (l *tsimLog) Since(ctx context.Context, since *topic.Position, limit topic.Limit) (topic.History, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inner.Since(ctx, since, limit)
}

func (l *tsimLog) Tail(ctx context.Context, n int, limit topic.Limit) (topic.History, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inner.Tail(ctx, n, limit)
}

func (l *tsimLog) Idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inner.Idle()
}

func (l *tsimLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s.mu.Lock()
	if l.s.open[l.name] == l {
		delete(l.s.open, l.name)
	}
	l.s.mu.Unlock()
	return l.inner.Close()
}

// newEpoch drops the history and starts a new epoch from seq 0.
func (l *tsimLog) newEpoch() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inner.Close()
	l.inner, _ = l.s.mem.Open(context.Background(), l.name, l.deliver)
}

// last returns where the log stands: its epoch and last seq.
func (l *tsimLog) last() topic.Position {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, _ := l.inner.Since(context.Background(), nil, topic.Limit{})
	return h.Last
}
