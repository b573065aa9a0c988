package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/peerwire/jsonrpc"
)

// holding is a name held on this node: the Peers registered under it, in
// registration order, and the node's two subscriptions for it.
type holding struct {
	name   string // the name, as Register got it
	regs   []*registration
	group  jsonrpc.Group      // the holders, for Notify
	notify *nats.Subscription // prefix.peer.<name>: every holding node
	call   *nats.Subscription // prefix.call.<name>, queue group "call": one
}

type registration struct {
	p    *jsonrpc.Peer
	stop func() bool // unregisters its end hook; nil until Register has it
}

// clear unsubscribes and forgets the holders (n.mu held). With drain, the
// calls NATS routed here before it saw the unsubscription still reach the
// inbox, and are answered "gone" rather than left to their callers' ctx.
func (h *holding) clear(drain bool) {
	for _, r := range h.regs {
		if r.stop != nil {
			r.stop()
		}
		h.group.Remove(r.p)
	}
	h.regs = nil
	unsubscribe(h.notify)
	if drain && h.call != nil {
		if h.call.Drain() == nil {
			return
		}
	}
	unsubscribe(h.call)
}

// Register gives p a cluster-wide name (a user id, a session id) until p's
// connection ends or unregister is called, whichever is first; unregister
// may be called more than once. Any string is a name. A name may be held by
// several Peers, on one node or several: Notify reaches them all, Call one
// of them (see Call). Register has no effect after the node's Close.
func (n *Node) Register(name string, p *jsonrpc.Peer) (unregister func()) {
	tok := token(name)
	r := &registration{p: p}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return func() {}
	}
	h := n.names[tok]
	if h == nil {
		h = &holding{name: name}
		h.group.MaxQueue = n.maxQueue
		h.notify = n.subscribe(n.prefix+"peer."+tok, "")
		h.call = n.subscribe(n.prefix+"call."+tok, "call")
		n.names[tok] = h
	}
	h.regs = append(h.regs, r)
	h.group.Add(p)
	n.mu.Unlock()

	var once sync.Once
	unregister = func() { once.Do(func() { n.unregister(tok, r) }) }
	stop := p.AfterFunc(unregister)
	n.mu.Lock()
	if h := n.names[tok]; h != nil && slices.Contains(h.regs, r) {
		r.stop = stop
	} else {
		stop() // unregistered meanwhile
	}
	n.mu.Unlock()
	return unregister
}

func (n *Node) unregister(tok string, r *registration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.names[tok]
	if h == nil {
		return
	}
	i := slices.Index(h.regs, r)
	if i < 0 {
		return
	}
	h.regs = slices.Delete(h.regs, i, i+1)
	if r.stop != nil {
		r.stop()
	}
	if !slices.ContainsFunc(h.regs, func(o *registration) bool { return o.p == r.p }) {
		h.group.Remove(r.p)
	}
	if len(h.regs) == 0 {
		h.clear(true)
		delete(n.names, tok)
	}
}

// holder returns the Peer that registered tok on this node most recently,
// or nil.
func (n *Node) holder(tok string) *jsonrpc.Peer {
	n.mu.Lock()
	defer n.mu.Unlock()
	if h := n.names[tok]; h != nil && len(h.regs) > 0 {
		return h.regs[len(h.regs)-1].p
	}
	return nil
}

// Call calls method on the Peer registered as name, on whichever node holds
// it, and unmarshals the result into result (nil to discard it), as
// jsonrpc.Peer.Call does; an error reply comes back as a *jsonrpc.Error,
// code, message and data intact.
//
// A name held on this node is called directly, without NATS. Otherwise the
// call crosses NATS (request/reply) to one node holding it, chosen at
// random by NATS among those that do; on that node, the Peer that
// registered the name most recently serves it. A name nobody holds fails at
// once with an error wrapping ErrUnknownPeer; so does a call whose Peer
// ended, or whose serving node closed, while serving it: the caller may
// try again, and reach another holder if there is one.
//
// Give ctx a deadline: a node that dies while serving the call never
// replies. When ctx ends first, the serving node cancels the ctx of its
// Peer's Call, which sends the cancel notification of that Peer's
// Options.Cancel dialect (jsonrpc.LSPCancel, say) to the remote side. While
// NATS is down, a call to a name held elsewhere waits for ctx.
func (n *Node) Call(ctx context.Context, name, method string, params, result any) (err error) {
	if n.isClosed() {
		return ErrClosed
	}
	tok := token(name)
	if p := n.holder(tok); p != nil {
		return gone(name, p.Call(ctx, method, params, result))
	}
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // nothing sent, nothing to cancel
	}
	id := n.id + "." + strconv.FormatUint(n.nextID.Add(1), 36)
	m := &nats.Msg{
		Subject: n.prefix + "call." + tok,
		Data:    frame(method, raw),
		Header:  nats.Header{hdrCallID: {id}},
	}
	if n.hook != nil {
		// A header of its own, which the hook sees: the one above, which
		// it does not, stays on the stack.
		h := nats.Header{hdrCallID: {id}}
		var end func(error)
		ctx, end = n.hook.Start(ctx, OpCall, name, method, h)
		defer func() { end(err) }()
		m.Header = h
	}
	if err := checkSize(n.nc, m); err != nil {
		return fmt.Errorf("cluster: call to %q: %w", name, err)
	}
	reply, err := n.nc.RequestMsgWithContext(ctx, m)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%w: %q", ErrUnknownPeer, name)
	case err != nil && ctx.Err() != nil:
		n.publishCancel(id)
		return ctx.Err()
	case err != nil:
		return publishErr(fmt.Sprintf("cluster: call to %q", name), err)
	case reply.Header.Get(hdrStatus) == statusGone:
		return fmt.Errorf("%w: %q left", ErrUnknownPeer, name)
	}
	var resp response
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return fmt.Errorf("cluster: call to %q: bad reply: %w", name, err)
	}
	if resp.Error != nil {
		return resp.Error
	}
	if result != nil {
		if err := json.Unmarshal(resp.Result, result); err != nil {
			return fmt.Errorf("cluster: failed to unmarshal result: %w", err)
		}
	}
	return nil
}

// gone wraps err, the error of a call to the Peer holding name, with
// ErrUnknownPeer when that Peer's connection has ended.
func gone(name string, err error) error {
	if errors.Is(err, jsonrpc.ErrClosed) {
		return fmt.Errorf("%w: %q left: %w", ErrUnknownPeer, name, err)
	}
	return err
}

// publishCancel tells the node serving call id that its caller stopped
// waiting. A cancellation is advice: if it is lost, the call runs to its
// end and its reply is dropped.
func (n *Node) publishCancel(id string) {
	m := &nats.Msg{Subject: n.prefix + "cancel", Header: nats.Header{hdrCallID: {id}}}
	if err := n.nc.PublishMsg(m); err != nil {
		n.log.Debug("cluster: cancel not sent", "node", n.id, "call", id, "err", err)
	}
}

// Notify sends a notification to every Peer registered as name, on every
// node, through the holders' queues (as a Topic's members get broadcasts:
// a holder that does not keep up is dropped). It returns once one node
// holding the name has queued it (or this node has, if it holds the name),
// and fails at once with an error wrapping ErrUnknownPeer when no node
// does. ctx bounds the wait for that acknowledgement: a notification that
// NATS routed to a node just as the name's last holder there left goes
// unacknowledged, and Notify then returns ctx's error.
func (n *Node) Notify(ctx context.Context, name, method string, params any) (err error) {
	if n.isClosed() {
		return ErrClosed
	}
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	tok := token(name)
	m := &nats.Msg{Subject: n.prefix + "peer." + tok, Data: frame(method, raw)}
	n.mu.Lock()
	var group *jsonrpc.Group
	if h := n.names[tok]; h != nil {
		group = &h.group
		m.Header = n.origin // our own copy comes back: skip it
	}
	n.mu.Unlock()
	if n.hook != nil {
		h := nats.Header{}
		if group != nil {
			h[hdrOrigin] = []string{n.id}
		}
		m.Header = h
		var end func(error)
		ctx, end = n.hook.Start(ctx, OpNotify, name, method, m.Header)
		defer func() { end(err) }()
	}
	if err := checkSize(n.nc, m); err != nil {
		return fmt.Errorf("cluster: notify %q: %w", name, err)
	}
	if group != nil {
		// Held here: deliver directly, publish for the other holders,
		// which need not exist, so no acknowledgement is awaited.
		if err := group.Notify(method, paramsArg(n.params(ctx, raw))); err != nil {
			return err
		}
		if err := n.nc.PublishMsg(m); err != nil {
			return publishErr(fmt.Sprintf("cluster: notify %q: delivered on this node only", name), err)
		}
		return nil
	}
	_, err = n.nc.RequestMsgWithContext(ctx, m)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%w: %q", ErrUnknownPeer, name)
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return publishErr(fmt.Sprintf("cluster: notify %q", name), err)
	}
	return nil
}

// params returns the params a Group of the node sends: raw, or what the
// node's hook makes of them for ctx.
func (n *Node) params(ctx context.Context, raw json.RawMessage) json.RawMessage {
	if n.hook == nil {
		return raw
	}
	return n.hook.Params(ctx, raw)
}

// deliverNamed queues a notification from NATS for the name's holders on
// this node, and acknowledges it if the sender waits. A name no longer
// held here is not acknowledged: another holder may be.
func (n *Node) deliverNamed(m *nats.Msg, tok string) {
	if m.Header.Get(hdrOrigin) == n.id {
		return
	}
	method, params, err := unframe(m.Data)
	if err != nil {
		n.log.Debug("cluster: notification dropped", "node", n.id, "subject", m.Subject, "err", err)
		return
	}
	n.mu.Lock()
	var group *jsonrpc.Group
	var name string
	if h := n.names[tok]; h != nil {
		group, name = &h.group, h.name
	}
	n.mu.Unlock()
	if group == nil {
		return
	}
	ctx := context.Background()
	if n.hook != nil {
		var end func(error)
		ctx, end = n.hook.Start(ctx, OpNotified, name, method, m.Header)
		defer func() { end(err) }()
	}
	if err = group.Notify(method, paramsArg(n.params(ctx, params))); err != nil {
		n.log.Debug("cluster: notification dropped", "node", n.id, "subject", m.Subject, "err", err)
		return
	}
	if m.Reply != "" {
		_ = m.Respond(nil) // if lost, the sender's ctx ends its wait
	}
}
