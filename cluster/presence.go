package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/peerwire/jsonrpc/topic"
)

// PresenceOptions configures NewPresenceStore. The zero value works.
type PresenceOptions struct {
	// Prefix starts the bucket's name: <Prefix, dots as underscores>_presence.
	// Default: "jsonrpc".
	Prefix string

	// TTL is how long a node's entries outlive it: each node puts its
	// entries again every TTL/3, and the bucket drops an entry nobody put
	// for TTL, so the identities of a node that died leave within about
	// TTL (plus a second for the marker that tells the watchers). Default:
	// 15 s; at least 3 s.
	TTL time.Duration

	// Replicas is the bucket's number of copies. Default: 3 when the
	// connection is to a NATS cluster, else 1.
	Replicas int
}

// A PresenceStore is a topic.PresenceStore for the Hubs of every node of a
// cluster, in a NATS key-value bucket: one entry per topic, identity and
// node (the names base64url-encoded, so any string works), each node
// putting its own again while it lives and deleting them when its Hub
// leaves; the bucket's TTL drops those of a node that died, with a marker
// that every watcher sees. Give the same PresenceStore to the node's Hubs:
//
//	ps, err := cluster.NewPresenceStore(nc, cluster.PresenceOptions{})
//	hub := &topic.Hub{Allow: mayFollow, Identity: userOf, Presence: isRoom, PresenceStore: ps}
//	defer ps.Close() // after the Hubs
//
// (TestPresenceAcrossNodes.)
type PresenceStore struct {
	kv   jetstream.KeyValue
	node string // this node's id in its keys: 96 random bits, base64url (newMsgID)
	ttl  time.Duration

	mu     sync.Mutex
	mine   map[string]int // this node's entries (topic.identity.node keys): Joins not yet Left
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

var _ topic.PresenceStore = (*PresenceStore)(nil)

// NewPresenceStore opens (making it if need be) the presence bucket on
// nc's JetStream and starts putting this node's entries again every TTL/3.
func NewPresenceStore(nc *nats.Conn, o PresenceOptions) (*PresenceStore, error) {
	if nc == nil {
		return nil, errors.New("cluster: NewPresenceStore needs a NATS connection")
	}
	if o.Prefix == "" {
		o.Prefix = "jsonrpc"
	}
	if o.TTL == 0 {
		o.TTL = 15 * time.Second
	}
	if o.TTL < 3*time.Second {
		return nil, fmt.Errorf("cluster: PresenceOptions.TTL %v is under 3 s", o.TTL)
	}
	if o.Replicas == 0 {
		o.Replicas = 1
		if nc.ConnectedClusterName() != "" {
			o.Replicas = 3
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         strings.ReplaceAll(o.Prefix, ".", "_") + "_presence",
		Description:    "github.com/peerwire/jsonrpc/cluster: who follows which topic, per node",
		Storage:        jetstream.MemoryStorage,
		Replicas:       o.Replicas,
		TTL:            o.TTL,
		LimitMarkerTTL: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: open the presence bucket: %w", err)
	}
	s := &PresenceStore{kv: kv, node: newMsgID(), ttl: o.TTL, mine: make(map[string]int), stop: make(chan struct{})}
	s.wg.Add(1)
	go s.refresh()
	return s, nil
}

// enc encodes a name as one key token: "_" and its base64url, never
// empty, as a key's token must not be.
func enc(s string) string { return "_" + base64.RawURLEncoding.EncodeToString([]byte(s)) }

// key is the entry of id on topic through this node.
func (s *PresenceStore) key(topic, id string) string {
	return enc(topic) + "." + enc(id) + "." + s.node
}

// Join records that id is present on topic through this node.
func (s *PresenceStore) Join(ctx context.Context, topic, id string) error {
	k := s.key(topic, id)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("cluster: PresenceStore closed")
	}
	s.mine[k]++
	first := s.mine[k] == 1
	s.mu.Unlock()
	if !first {
		return nil
	}
	if _, err := s.kv.Put(ctx, k, nil); err != nil {
		s.unjoin(k) // not present through this node after all: the Hub retries
		return err
	}
	return nil
}

// unjoin takes back a Join whose entry could not be put.
func (s *PresenceStore) unjoin(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mine[k]--; s.mine[k] <= 0 {
		delete(s.mine, k)
	}
}

// Leave records that id is no longer present on topic through this node.
func (s *PresenceStore) Leave(ctx context.Context, topic, id string) error {
	k := s.key(topic, id)
	s.mu.Lock()
	n, ok := s.mine[k]
	if !ok {
		s.mu.Unlock()
		return nil
	}
	if n > 1 {
		s.mine[k] = n - 1
		s.mu.Unlock()
		return nil
	}
	delete(s.mine, k)
	s.mu.Unlock()
	return s.kv.Delete(ctx, k)
}

// List returns the identities present on topic through any node, sorted.
func (s *PresenceStore) List(ctx context.Context, topic string) ([]string, error) {
	l, err := s.kv.ListKeysFiltered(ctx, enc(topic)+".>")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, nil
		}
		return nil, err
	}
	seen := map[string]bool{}
	for k := range l.Keys() {
		if id, ok := idOf(k); ok {
			seen[id] = true
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// idOf decodes the identity of a key, topic.identity.node.
func idOf(k string) (string, bool) {
	parts := strings.Split(k, ".")
	if len(parts) != 3 {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(parts[1], "_"))
	return string(b), err == nil
}

// Watch returns the identities present on topic now and calls change as
// identities come and go through any node, one call at a time, in order,
// until stop is called.
func (s *PresenceStore) Watch(ctx context.Context, topic string, change func(id string, present bool)) ([]string, func(), error) {
	w, err := s.kv.Watch(context.WithoutCancel(ctx), enc(topic)+".>")
	if err != nil {
		return nil, nil, err
	}
	nodes := map[string]map[string]bool{} // identity -> its keys present
	apply := func(e jetstream.KeyValueEntry) (id string, was, is bool) {
		id, ok := idOf(e.Key())
		if !ok {
			return "", false, false
		}
		was = len(nodes[id]) > 0
		if e.Operation() == jetstream.KeyValuePut {
			if nodes[id] == nil {
				nodes[id] = map[string]bool{}
			}
			nodes[id][e.Key()] = true
		} else {
			delete(nodes[id], e.Key())
			if len(nodes[id]) == 0 {
				delete(nodes, id)
			}
		}
		return id, was, len(nodes[id]) > 0
	}
	// The entries there now, then nil.
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
initial:
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, nil, errors.New("cluster: the presence watch ended")
			}
			if e == nil {
				break initial
			}
			apply(e)
		case <-ctx.Done():
			w.Stop()
			return nil, nil, ctx.Err()
		case <-timer.C:
			w.Stop()
			return nil, nil, errors.New("cluster: the presence bucket did not answer in 10 s")
		}
	}
	present := make([]string, 0, len(nodes))
	for id := range nodes {
		present = append(present, id)
	}
	slices.Sort(present)
	done := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				if id, was, is := apply(e); id != "" && was != is {
					change(id, is)
				}
			case <-quit:
				return
			}
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			close(quit)
			w.Stop()
			<-done
		})
	}
	return present, stop, nil
}

// refresh puts this node's entries again every TTL/3, so that they live
// while the node does.
func (s *PresenceStore) refresh() {
	defer s.wg.Done()
	t := time.NewTicker(s.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		keys := make([]string, 0, len(s.mine))
		for k := range s.mine {
			keys = append(keys, k)
		}
		s.mu.Unlock()
		for _, k := range keys {
			ctx, cancel := context.WithTimeout(context.Background(), s.ttl/3)
			_, _ = s.kv.Put(ctx, k, nil) // a failure is retried at the next tick; the TTL bounds the rest
			cancel()
		}
	}
}

// Close stops putting this node's entries again and deletes them (within
// 5 s; what is not deleted expires after TTL). Close the Hubs first.
func (s *PresenceStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	keys := make([]string, 0, len(s.mine))
	for k := range s.mine {
		keys = append(keys, k)
	}
	s.mine = nil
	s.mu.Unlock()
	close(s.stop)
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, k := range keys {
		errs = append(errs, s.kv.Delete(ctx, k))
	}
	return errors.Join(errs...)
}
