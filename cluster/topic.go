package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/peerwire/jsonrpc"
)

// A Topic is a set of Peers, spread over the nodes, that receive the same
// broadcasts: the cluster-wide counterpart of a jsonrpc.Group. Each node
// knows only its own (local) members, and delivers to them through a
// jsonrpc.Group, with its slow-consumer policy: a member whose queue is
// full is dropped, nobody else waits.
//
// A node subscribes to a topic's NATS subject only while the topic has a
// local member. Topic names are any strings (they are encoded into one
// subject token). A Topic is safe for concurrent use.
type Topic struct {
	n       *Node
	name    string
	subject string
	group   jsonrpc.Group
	pub     sync.Mutex // Notify: local delivery and publish in one order

	// Guarded by n.mu.
	members map[*jsonrpc.Peer]*member
	sub     *nats.Subscription // while members is not empty
}

// member is a local member of a Topic.
type member struct {
	stop func() bool // unregisters its end hook; nil until Add has it
}

// Topic returns the topic called name: the same *Topic for the same name,
// for the node's life.
func (n *Node) Topic(name string) *Topic {
	tok := token(name)
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.topics[tok]
	if t == nil {
		t = &Topic{
			n:       n,
			name:    name,
			subject: n.prefix + "topic." + tok,
			members: make(map[*jsonrpc.Peer]*member),
		}
		t.group.MaxQueue = n.maxQueue
		n.topics[tok] = t
	}
	return t
}

// Name returns the topic's name.
func (t *Topic) Name() string { return t.name }

// Add makes p a local member. p leaves by itself when its connection ends.
// Add has no effect if p is a member already, or after the node's Close.
// The first member makes the node subscribe to the topic (see Node.Flush).
func (t *Topic) Add(p *jsonrpc.Peer) {
	n := t.n
	m := &member{}
	n.mu.Lock()
	if n.closed || t.members[p] != nil {
		n.mu.Unlock()
		return
	}
	t.members[p] = m
	if t.sub == nil {
		t.sub = n.subscribe(t.subject, "")
	}
	t.group.Add(p)
	n.mu.Unlock()

	stop := p.AfterFunc(func() { t.Remove(p) })
	n.mu.Lock()
	if t.members[p] == m {
		m.stop = stop
	} else {
		stop() // removed meanwhile
	}
	n.mu.Unlock()
}

// Remove takes p out of the topic; broadcasts queued for it are dropped.
// The last local member to leave makes the node unsubscribe.
func (t *Topic) Remove(p *jsonrpc.Peer) {
	t.n.mu.Lock()
	defer t.n.mu.Unlock()
	m := t.members[p]
	if m == nil {
		return
	}
	delete(t.members, p)
	if m.stop != nil {
		m.stop()
	}
	t.group.Remove(p)
	if len(t.members) == 0 {
		unsubscribe(t.sub)
		t.sub = nil
	}
}

// clear unsubscribes and forgets the members (n.mu held): the node closes.
func (t *Topic) clear() {
	for p, m := range t.members {
		if m.stop != nil {
			m.stop()
		}
		t.group.Remove(p)
		delete(t.members, p)
	}
	unsubscribe(t.sub)
	t.sub = nil
}

// Len returns the number of local members.
func (t *Topic) Len() int {
	t.n.mu.Lock()
	defer t.n.mu.Unlock()
	return len(t.members)
}

// Notify sends a notification to every member of the topic on every node.
// params are encoded once, as for jsonrpc.Peer.Notify, and go out in one
// NATS message; this node's own members get it directly, not through NATS,
// so they get it even while NATS is down. Notify never waits for a member.
//
// It fails before delivering anywhere when params cannot be encoded or the
// message is over the server's max_payload (ErrTooLarge), and returns
// ErrClosed after the node's Close. An error from NATS itself (a
// reconnect buffer full, a closed connection) comes back after this node's
// members got the notification: the other nodes' did not.
func (t *Topic) Notify(method string, params any) error {
	return t.NotifyContext(context.Background(), method, params)
}

// NotifyContext is Notify with the context of the broadcast, which the
// node's Hook (Options.Hook) sees and may carry to the other nodes and to
// the members (its trace context). ctx bounds nothing: Notify never waits.
func (t *Topic) NotifyContext(ctx context.Context, method string, params any) (err error) {
	n := t.n
	if n.isClosed() {
		return ErrClosed
	}
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	m := &nats.Msg{Subject: t.subject, Data: frame(method, raw), Header: n.origin}
	if n.hook != nil {
		m.Header = nats.Header{hdrOrigin: {n.id}}
		var end func(error)
		ctx, end = n.hook.Start(ctx, OpPublish, t.name, method, m.Header)
		defer func() { end(err) }()
	}
	if err := checkSize(n.nc, m); err != nil {
		return fmt.Errorf("cluster: topic %q: %w", t.name, err)
	}
	// Under pub, so that notifications sent concurrently on this node
	// reach its members in the order the other nodes get them.
	t.pub.Lock()
	defer t.pub.Unlock()
	if err := t.deliver(ctx, method, raw, nil); err != nil {
		return err
	}
	if err := n.nc.PublishMsg(m); err != nil {
		return publishErr(fmt.Sprintf("cluster: topic %q: delivered on this node only", t.name), err)
	}
	return nil
}

// deliver hands a broadcast to the topic's local members, through the
// node's hook if it has one (header: the NATS message's, nil for this
// node's own broadcast).
func (t *Topic) deliver(ctx context.Context, method string, raw json.RawMessage, header nats.Header) error {
	hook := t.n.hook
	if hook == nil {
		return t.group.Notify(method, paramsArg(raw))
	}
	ctx, end := hook.Start(ctx, OpProcess, t.name, method, header)
	err := t.group.Notify(method, paramsArg(hook.Params(ctx, raw)))
	end(err)
	return err
}

// deliverTopic hands a broadcast from NATS to the topic's local members,
// unless this node published it (its members have it already).
func (n *Node) deliverTopic(m *nats.Msg, tok string) {
	if m.Header.Get(hdrOrigin) == n.id {
		return
	}
	n.mu.Lock()
	t := n.topics[tok]
	n.mu.Unlock()
	if t == nil {
		return
	}
	method, params, err := unframe(m.Data)
	if err != nil {
		n.log.Debug("cluster: broadcast dropped", "node", n.id, "subject", m.Subject, "err", err)
		return
	}
	if err := t.deliver(context.Background(), method, params, m.Header); err != nil {
		n.log.Debug("cluster: broadcast dropped", "node", n.id, "subject", m.Subject, "err", err)
	}
}

// paramsArg is raw as a Peer's params argument: nil for none.
func paramsArg(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	return raw
}
