package jsonrpc

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// ErrSlowConsumer is wrapped by the cause of a connection that a Group ended
// because the remote side did not read its notifications fast enough.
var ErrSlowConsumer = errors.New("jsonrpc: peer too slow: notification queue full")

// Group is a set of Peers that receive the same notifications: a server
// pushing to all its clients. A Peer leaves the group when its connection
// ends.
//
// Notify never blocks on a member: each member has its own queue of
// outgoing notifications, bounded by MaxQueue and drained by a goroutine
// that runs only while the queue is not empty. A member whose queue is full
// (a client that stopped reading) is dropped: its connection is ended with
// a cause wrapping ErrSlowConsumer, which its Wait returns. The others are
// not delayed.
//
// A member gets a Group's broadcasts in the order they were made, and
// what its Peer sends itself (Notify, Call, replies) in its own order, but
// the two are not ordered with each other: a broadcast waits in the
// member's Group queue, and a later Peer.Notify may reach the remote
// first (TestGroupAndPeerNotifyEachInOrder). Send through one or the other
// when their order matters.
//
// A Group's notifications do not pass through the members' interceptors,
// which could block the broadcaster; wrap Group.Notify itself to log or
// count broadcasts.
//
// The zero value is an empty Group ready to use. A Group is safe for
// concurrent use.
type Group struct {
	// MaxQueue bounds each member's queued notifications. Default: 256.
	MaxQueue int

	mu      sync.Mutex
	members map[*Peer]*outbox // encoded notifications, shared by all members
}

// Add makes p a member. It has no effect if p is a member already or its
// connection has ended.
func (g *Group) Add(p *Peer) {
	g.mu.Lock()
	if g.members == nil {
		g.members = make(map[*Peer]*outbox)
	}
	if _, dup := g.members[p]; dup {
		g.mu.Unlock()
		return
	}
	o := newOutbox(p)
	g.members[p] = o
	g.mu.Unlock()
	stop := p.afterEnd(func() { g.Remove(p) })
	g.mu.Lock()
	if g.members[p] == o {
		o.leave = stop // Remove unregisters the hook
	} else {
		stop() // removed meanwhile
	}
	g.mu.Unlock()
}

// Remove takes p out of the group; notifications queued for it are dropped.
func (g *Group) Remove(p *Peer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if o, ok := g.members[p]; ok {
		o.clear()
		if o.leave != nil {
			o.leave()
		}
		delete(g.members, p)
	}
}

// Len returns the number of members.
func (g *Group) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.members)
}

// Notify sends a notification to every member except those in skip. params
// are marshalled once, as for Peer.Notify. Notify returns without waiting for
// any write; it fails only if params cannot be marshalled.
func (g *Group) Notify(method string, params any, skip ...*Peer) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	msg := appendRequest(nil, ID{}, method, raw)
	limit := g.MaxQueue
	if limit <= 0 {
		limit = 256
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for p, o := range g.members {
		if slices.Contains(skip, p) {
			continue
		}
		if !o.push(p, msg, limit, 0) {
			delete(g.members, p)
			cause := fmt.Errorf("%w (%d queued)", ErrSlowConsumer, o.len())
			o.clear()
			p.goOwned(func() { p.end(cause) })
		}
	}
	return nil
}
