package topic

import (
	"context"
	"slices"
	"sync"
)

// A PresenceStore keeps who is present on which topic for the Hubs that
// share it: MemoryPresence (the default) in this process; the cluster
// module's on NATS KV, for every node. A Hub calls Join when an identity's
// first connection subscribes to a topic on it, and Leave when its last
// one goes; it calls them for one topic one at a time, never for an
// identity twice in a row the same way.
type PresenceStore interface {
	// Join records that id is present on topic through this Hub.
	Join(ctx context.Context, topic, id string) error

	// Leave records that id is no longer present on topic through this
	// Hub; it stays present while another Hub has it.
	Leave(ctx context.Context, topic, id string) error

	// List returns the identities present on topic through any Hub,
	// sorted.
	List(ctx context.Context, topic string) ([]string, error)

	// Watch returns the identities present on topic now, and calls
	// change with each that becomes present (true) or absent (false)
	// afterwards through any Hub, one call at a time, in order, until
	// stop is called (stop waits for a change that runs). change must
	// not block, nor call the store.
	Watch(ctx context.Context, topic string, change func(id string, present bool)) (present []string, stop func(), err error)
}

// MemoryPresence is a PresenceStore in this process: the default of a
// Hub, and one several Hubs of a process may share. An identity is present
// on a topic while a Hub has joined it there. The zero value is ready;
// a MemoryPresence is safe for concurrent use.
type MemoryPresence struct {
	mu     sync.Mutex
	topics map[string]*memPresence
}

// memPresence is one topic's presence in a MemoryPresence.
type memPresence struct {
	hubs     map[string]int // identity -> Hubs that joined it
	watchers map[*func(string, bool)]struct{}
}

// Join counts one more Hub for id on topic.
func (m *MemoryPresence) Join(_ context.Context, topic, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.topic(topic)
	p.hubs[id]++
	if p.hubs[id] == 1 {
		p.tell(id, true)
	}
	return nil
}

// Leave counts one Hub less for id on topic.
func (m *MemoryPresence) Leave(_ context.Context, topic, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.topics[topic]
	if p == nil || p.hubs[id] == 0 {
		return nil
	}
	p.hubs[id]--
	if p.hubs[id] == 0 {
		delete(p.hubs, id)
		p.tell(id, false)
	}
	m.tidy(topic, p)
	return nil
}

// List returns the identities present on topic, sorted.
func (m *MemoryPresence) List(_ context.Context, topic string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.list(topic), nil
}

// Watch returns who is present on topic, and tells change of every change
// after, until stop.
func (m *MemoryPresence) Watch(_ context.Context, topic string, change func(string, bool)) ([]string, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	present := m.list(topic)
	p := m.topic(topic)
	key := &change
	p.watchers[key] = struct{}{}
	stop := func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(p.watchers, key)
		m.tidy(topic, p)
	}
	return present, stop, nil
}

// topic returns topic's presence, made if need be. m.mu held.
func (m *MemoryPresence) topic(name string) *memPresence {
	p := m.topics[name]
	if p == nil {
		p = &memPresence{hubs: make(map[string]int), watchers: make(map[*func(string, bool)]struct{})}
		if m.topics == nil {
			m.topics = make(map[string]*memPresence)
		}
		m.topics[name] = p
	}
	return p
}

// tidy forgets a topic nobody is present on or watches. m.mu held.
func (m *MemoryPresence) tidy(name string, p *memPresence) {
	if len(p.hubs) == 0 && len(p.watchers) == 0 && m.topics[name] == p {
		delete(m.topics, name)
	}
}

// list returns the identities present on topic, sorted. m.mu held.
func (m *MemoryPresence) list(name string) []string {
	p := m.topics[name]
	if p == nil {
		return []string{}
	}
	ids := make([]string, 0, len(p.hubs))
	for id := range p.hubs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// tell calls every watcher with a change. Under the store's lock, so that
// changes reach each watcher in order.
func (p *memPresence) tell(id string, present bool) {
	for w := range p.watchers {
		(*w)(id, present)
	}
}
