package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

var (
	// ErrUnknownPeer is wrapped by the error of a Call or Notify to a name
	// that no Peer holds on any node, which NATS reports at once (no
	// responders): there is no timeout to wait for.
	ErrUnknownPeer = errors.New("cluster: no peer by that name")

	// ErrClosed is returned by what a Node is asked to do after Close.
	ErrClosed = errors.New("cluster: node closed")
)

// Options configure a Node. The zero value gives the defaults each field
// documents.
type Options struct {
	// Prefix starts every NATS subject the Node uses, so that several
	// applications (or environments) can share a NATS server: one or more
	// dot-separated tokens without wildcards or whitespace. Nodes that
	// serve the same application must use the same Prefix. Default:
	// "jsonrpc".
	Prefix string

	// NodeID names this node in the headers of what it publishes and in
	// logs; it must be unique among the nodes. Default: a random NUID.
	NodeID string

	// Logger receives the Node's events: NATS lost and back (Info),
	// messages it could not handle (Debug). Default: slog.Default().
	Logger *slog.Logger

	// MaxQueue bounds the broadcasts queued for each local member of a
	// Topic (and each holder of a name), as jsonrpc.Group.MaxQueue does: a
	// member whose queue is full is dropped. Default: 256.
	MaxQueue int

	// MaxCalls bounds the cross-node calls this node serves at once, for
	// all the names it holds together; a call beyond it is answered at
	// once with a jsonrpc.CodeOverloaded error. Default: 10000.
	MaxCalls int

	// Hook, if set, sees every broadcast, call and notification this node
	// sends to or gets from the other nodes, with its NATS headers (the
	// otel module's Telemetry.ClusterHook: spans, and the trace context
	// across the NATS hop), and the params its Groups send to its Peers.
	// Default (nil): nothing is called, and nothing more allocated.
	Hook Hook
}

// inboxSize is the capacity of the channel into which every subscription of
// a Node delivers. Beyond it nats.go drops messages and reports a slow
// consumer to the connection's error handler; the one goroutine that reads
// it never waits for a Peer.
const inboxSize = 1 << 16

// Node is one application process in a cluster of processes that share a
// NATS server (or cluster): it carries broadcasts to the Topics' members on
// every node and calls to Peers registered by name on any node. See the
// package doc for the delivery guarantees.
//
// All methods are safe for concurrent use. A Node starts two goroutines,
// plus one per cross-node call it is serving; Close stops them all.
type Node struct {
	nc       *nats.Conn
	id       string
	prefix   string // with its trailing "."
	log      *slog.Logger
	maxQueue int
	maxCalls int
	hook     Hook        // Options.Hook
	origin   nats.Header // {hdrOrigin: id}, shared read-only by publishes

	inbox  chan *nats.Msg   // every subscription delivers here
	status chan nats.Status // the connection's state changes
	done   chan struct{}    // closed by Close: the goroutines return
	ctx    context.Context  // the served calls' parent; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine of the Node
	nextID atomic.Uint64  // for call ids
	once   sync.Once      // Close

	mu        sync.Mutex // guards all that follows, and every Topic's fields
	closed    bool
	topics    map[string]*Topic             // by token
	names     map[string]*holding           // by token; only names held
	calls     map[string]context.CancelFunc // served calls by call id
	serving   int                           // len(calls), and calls with no id
	cancelSub *nats.Subscription            // prefix.cancel
}

// New starts a Node on nc, configured by opts (at most one). The caller
// owns nc: make it with the reconnect behaviour you want (see the package
// doc: nats.RetryOnFailedConnect, nats.MaxReconnects(-1)) and close it after
// the Node.
func New(nc *nats.Conn, opts ...Options) (*Node, error) {
	if nc == nil {
		return nil, errors.New("cluster: nil *nats.Conn")
	}
	if len(opts) > 1 {
		return nil, errors.New("cluster: more than one Options")
	}
	var o Options
	if len(opts) == 1 {
		o = opts[0]
	}
	if err := o.fill(); err != nil {
		return nil, err
	}
	n := &Node{
		nc:       nc,
		id:       o.NodeID,
		prefix:   o.Prefix + ".",
		log:      o.Logger,
		maxQueue: o.MaxQueue,
		maxCalls: o.MaxCalls,
		hook:     o.Hook,
		origin:   nats.Header{hdrOrigin: {o.NodeID}},
		inbox:    make(chan *nats.Msg, inboxSize),
		done:     make(chan struct{}),
		topics:   make(map[string]*Topic),
		names:    make(map[string]*holding),
		calls:    make(map[string]context.CancelFunc),
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	sub, err := nc.ChanSubscribe(n.prefix+"cancel", n.inbox)
	if err != nil {
		n.cancel()
		return nil, fmt.Errorf("cluster: failed to subscribe: %w", err)
	}
	n.cancelSub = sub
	n.status = nc.StatusChanged(nats.CONNECTED, nats.RECONNECTING, nats.DISCONNECTED, nats.CLOSED)
	n.wg.Go(n.dispatchLoop)
	n.wg.Go(n.watch)
	return n, nil
}

// fill sets the defaults and checks what was given.
func (o *Options) fill() error {
	if o.Prefix == "" {
		o.Prefix = "jsonrpc"
	}
	for tok := range strings.SplitSeq(o.Prefix, ".") {
		if tok == "" || strings.ContainsFunc(tok, func(r rune) bool {
			return r <= ' ' || r == '*' || r == '>' || r >= 0x7f
		}) {
			return fmt.Errorf("cluster: Prefix %q is not a NATS subject without wildcards", o.Prefix)
		}
	}
	if o.NodeID == "" {
		o.NodeID = nuid.Next()
	}
	if strings.ContainsFunc(o.NodeID, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("cluster: NodeID %q holds control characters", o.NodeID)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = 256
	}
	if o.MaxCalls <= 0 {
		o.MaxCalls = 10000
	}
	return nil
}

// ID returns the node's id (Options.NodeID).
func (n *Node) ID() string { return n.id }

// Connected reports whether the NATS connection is up, for health checks.
// While it is down the node keeps serving its own members: their
// broadcasts reach them, and calls to names it holds work.
func (n *Node) Connected() bool { return n.nc.IsConnected() }

// Flush waits until the NATS server has processed every subscription this
// node has made so far, so that a broadcast published on another node after
// Flush returns reaches the members added before it was called. ctx must
// have a deadline. Applications rarely need it; tests do.
func (n *Node) Flush(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	return n.nc.FlushWithContext(ctx)
}

// Close unsubscribes everything the node subscribed to, stops its
// goroutines (the calls it is serving see their ctx cancelled first) and
// forgets its members and names. It does not close the NATS connection and
// ends no Peer. Close returns nil, and may be called more than once.
func (n *Node) Close() error {
	n.once.Do(func() {
		n.mu.Lock()
		n.closed = true
		for _, t := range n.topics {
			t.clear()
		}
		for tok, h := range n.names {
			h.clear(false)
			delete(n.names, tok)
		}
		unsubscribe(n.cancelSub)
		n.mu.Unlock()
		n.nc.RemoveStatusListener(n.status) // closes it: watch returns
		n.cancel()
		close(n.done)
		n.wg.Wait()
	})
	return nil
}

func (n *Node) isClosed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}

// subscribe subscribes subj into the inbox (through queue group queue, if
// not ""), or logs why it could not: the connection is closed.
func (n *Node) subscribe(subj, queue string) *nats.Subscription {
	sub, err := n.nc.ChanQueueSubscribe(subj, queue, n.inbox)
	if err != nil {
		n.log.Error("cluster: failed to subscribe", "node", n.id, "subject", subj, "err", err)
		return nil
	}
	return sub
}

// unsubscribe ends sub, if any. An error means the connection is closed,
// which ended sub already.
func unsubscribe(sub *nats.Subscription) {
	if sub != nil {
		_ = sub.Unsubscribe()
	}
}

// watch logs when the NATS connection goes and comes back.
func (n *Node) watch() {
	up := n.nc.IsConnected()
	for s := range n.status {
		if now := s == nats.CONNECTED; now != up {
			up = now
			if up {
				n.log.Info("cluster: NATS connection back: broadcasts and calls cross nodes again", "node", n.id)
			} else {
				n.log.Info("cluster: NATS connection lost: serving this node's own members only", "node", n.id, "status", s.String())
			}
		}
	}
}

// dispatchLoop hands every message the node's subscriptions receive to
// whom it is for. It never waits for a Peer: broadcasts go through Groups,
// calls to goroutines of their own.
func (n *Node) dispatchLoop() {
	for {
		select {
		case m := <-n.inbox:
			n.dispatch(m)
		case <-n.done:
			return
		}
	}
}

func (n *Node) dispatch(m *nats.Msg) {
	rest, ok := strings.CutPrefix(m.Subject, n.prefix)
	if !ok {
		return
	}
	kind, tok, _ := strings.Cut(rest, ".")
	switch kind {
	case "topic":
		n.deliverTopic(m, tok)
	case "peer":
		n.deliverNamed(m, tok)
	case "call":
		n.serveCall(m, tok)
	case "cancel":
		n.cancelCall(m.Header.Get(hdrCallID))
	}
}
