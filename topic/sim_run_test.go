package topic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// The executor of a topic simulation run: a Hub on a tsimStore, clients
// with a Follower each over Pipes it connects and drops, run step by step
// in a testing/synctest bubble (fake time; every goroutine waits before
// the invariants are checked: sim_check_test.go).

// tsimWorld is one run.
type tsimWorld struct {
	plan    *tsimPlan
	hub     *topic.Hub
	store   *tsimStore
	smux    *jsonrpc.Mux
	allowed []atomic.Bool // per topic
	clients []*tsimClient
	step    int // the step being run, for the reports

	mu         sync.Mutex
	published  map[tsimKey]string // what was published at each position
	violations []string
	stats      map[string]int // counts for the summary
}

// tsimKey is a message's place: topic and position.
type tsimKey struct {
	topic string
	pos   topic.Position
}

// tsimClient is one client: a Follower, and its connection while up.
type tsimClient struct {
	w    *tsimWorld
	id   int
	f    *topic.Follower
	cmux *jsonrpc.Mux

	dmu    sync.Mutex    // guards the four below: a step and an async one may overlap
	peer   *jsonrpc.Peer // client side; nil while down
	server *jsonrpc.Peer
	synced map[string]bool // topics whose last subscribe on this connection succeeded
	ended  bool            // the connection's end has been counted

	mu     sync.Mutex
	seen   map[string]topic.Position // what the application was handed, per topic
	msgs   []tsimSeen                // messages handed since the last check
	block  time.Duration             // the next OnMessage sleeps this long
	asleep bool
}

type tsimSeen struct {
	topic string
	pos   topic.Position
	data  string
}

func tsimTopic(i int) string { return fmt.Sprintf("t%d", i) }

func newTsimWorld(p *tsimPlan) *tsimWorld {
	w := &tsimWorld{plan: p, store: &tsimStore{}, smux: jsonrpc.NewMux(), allowed: make([]atomic.Bool, p.topics),
		published: make(map[tsimKey]string), stats: make(map[string]int)}
	w.store.mem = topic.Memory{MaxBytes: p.maxBytes, MaxAge: p.maxAge}
	for i := range w.allowed {
		w.allowed[i].Store(true)
	}
	w.hub = &topic.Hub{
		Store:            w.store,
		MaxQueue:         p.maxQueue,
		MaxReplyMessages: p.replyMsgs,
		MaxConnTopics:    p.connTopics,
		MaxTopics:        p.maxTopics,
		Allow: func(_ context.Context, name string) error {
			var i int
			if _, err := fmt.Sscanf(name, "t%d", &i); err != nil || i >= len(w.allowed) || !w.allowed[i].Load() {
				return jsonrpc.NewError(topic.CodeNoSuchTopic, "no such topic", nil)
			}
			return nil
		},
	}
	w.hub.Register(w.smux)
	for i := range p.clients {
		w.clients = append(w.clients, w.newClient(i))
	}
	return w
}

func (w *tsimWorld) newClient(id int) *tsimClient {
	c := &tsimClient{w: w, id: id, cmux: jsonrpc.NewMux(), seen: make(map[string]topic.Position)}
	c.f = &topic.Follower{MaxBuffered: w.plan.maxBuffered, History: w.plan.history, OnMessage: c.onMessage, OnReset: c.onReset,
		OnError: func(string, error) { w.count("refused later (OnError)") }}
	c.f.Register(c.cmux)
	return c
}

func (w *tsimWorld) violate(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.violations = append(w.violations, fmt.Sprintf("step %d: ", w.step)+fmt.Sprintf(format, args...))
}

// wasPublished reports whether a message was published at pos of name.
func (w *tsimWorld) wasPublished(name string, pos topic.Position) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.published[tsimKey{name, pos}]
	return ok
}

func (w *tsimWorld) count(what string) {
	w.mu.Lock()
	w.stats[what]++
	w.mu.Unlock()
}

// onReset and onMessage check order as the application gets it: after a
// reset at (E, s), the messages of E from s+1 on, each once, in order.
func (c *tsimClient) onReset(name string, at topic.Position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[name] = at
	c.w.count("resets")
}

func (c *tsimClient) onMessage(m topic.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.seen[m.Topic]
	switch {
	case !ok:
		c.w.violate("client %d: message %s:%d of %s before any reset", c.id, m.Epoch, m.Seq, m.Topic)
	case m.Epoch != at.Epoch && at.Seq == 0 && m.Seq == 1 && !c.w.wasPublished(m.Topic, topic.Position{Epoch: at.Epoch, Seq: 1}):
		// The first message of a new epoch after an old one that had none:
		// nothing was lost, and the Follower goes on without a reset.
	case m.Epoch != at.Epoch || m.Seq != at.Seq+1:
		c.w.violate("client %d: message %s:%d of %s after %s:%d (a duplicate, a gap or another epoch handed to the application)",
			c.id, m.Epoch, m.Seq, m.Topic, at.Epoch, at.Seq)
	}
	c.seen[m.Topic] = topic.Position{Epoch: m.Epoch, Seq: m.Seq}
	c.msgs = append(c.msgs, tsimSeen{topic: m.Topic, pos: topic.Position{Epoch: m.Epoch, Seq: m.Seq}, data: string(m.Data)})
	c.w.count("messages handed")
}

// serverHandler is the Hub's Mux, counting the paged replies.
func (w *tsimWorld) serverHandler() jsonrpc.Handler {
	return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		res, err := w.smux.ServeRPC(ctx, req)
		if r, ok := res.(topic.SubscribeResult); ok && r.More {
			w.count("paged replies")
		}
		return res, err
	})
}

// handler is the client's Handler: the Follower's, behind a slow reader
// when the plan makes one. It sleeps before the Follower sees the
// message, holding none of its locks (a goroutine waiting on a mutex does
// not let a synctest bubble's clock move), and the connection pushes back
// meanwhile: its notifications are handled in order.
func (c *tsimClient) handler() jsonrpc.Handler {
	return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if req.Method == topic.MethodMessage {
			c.mu.Lock()
			d := c.block
			c.block = 0
			c.asleep = d > 0
			c.mu.Unlock()
			if d > 0 {
				time.Sleep(d)
				c.mu.Lock()
				c.asleep = false
				c.mu.Unlock()
			}
		}
		return c.cmux.ServeRPC(ctx, req)
	})
}

// conn returns the client's connection, both ends, and whether it is up.
func (c *tsimClient) conn() (client, server *jsonrpc.Peer, up bool) {
	c.dmu.Lock()
	client, server = c.peer, c.server
	c.dmu.Unlock()
	if client == nil {
		return nil, nil, false
	}
	select {
	case <-client.Done():
		return client, server, false
	case <-server.Done():
		return client, server, false
	default:
		return client, server, true
	}
}

func (c *tsimClient) up() bool {
	_, _, up := c.conn()
	return up
}

// connect opens a connection and subscribes every followed topic again;
// a failed Resubscribe ends it, as a ws.Client's OnConnect would.
func (c *tsimClient) connect(ctx context.Context) {
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: c.w.serverHandler()})
	p := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: c.handler()})
	c.dmu.Lock()
	c.peer, c.server, c.synced, c.ended = p, server, make(map[string]bool), false
	c.dmu.Unlock()
	if err := c.f.Resubscribe(ctx, p); err != nil {
		c.w.count("resubscribe failed: connection dropped")
		p.Close()
		return
	}
	c.dmu.Lock()
	defer c.dmu.Unlock()
	for i := range c.w.plan.topics {
		name := tsimTopic(i)
		if _, ok := c.f.Position(name); ok && c.peer == p {
			c.synced[name] = true
		}
	}
}

// drop ends the connection, from the client's side or the server's.
func (c *tsimClient) drop(server bool) {
	p, s, _ := c.conn()
	switch {
	case p == nil:
	case server:
		s.Close()
	default:
		p.Close()
	}
}

// close ends the connection and waits for both Peers.
func (c *tsimClient) close() {
	if p, s, _ := c.conn(); p != nil {
		p.Close()
		s.Close()
		p.Wait()
		s.Wait()
	}
}

// subscribe runs Follower.Subscribe on the current connection; an error
// other than a refusal ends the connection (the application was told, and
// a reconnection subscribes again).
func (c *tsimClient) subscribe(ctx context.Context, name string) {
	p, _, up := c.conn()
	if !up {
		return
	}
	err := c.f.Subscribe(ctx, p, name)
	c.dmu.Lock()
	defer c.dmu.Unlock()
	switch {
	case p != c.peer:
	case err == nil:
		c.synced[name] = true
	case tsimRefusal(err):
		delete(c.synced, name)
		c.w.count("refused")
	default:
		c.w.count("subscribe failed: connection dropped")
		p.Close()
	}
}

// unsubscribe runs Follower.Unsubscribe, on the connection if it is up.
func (c *tsimClient) unsubscribe(ctx context.Context, name string) {
	p, _, up := c.conn()
	if !up {
		p = nil
	}
	c.dmu.Lock()
	delete(c.synced, name)
	c.dmu.Unlock()
	c.f.Unsubscribe(ctx, p, name)
}

func tsimRefusal(err error) bool {
	switch rpcCode(err) {
	case 0, jsonrpc.CodeInternalError, jsonrpc.CodeOverloaded, jsonrpc.CodeShuttingDown:
		return false
	}
	return true
}

// run executes the plan, checking the invariants after every step.
func (w *tsimWorld) run() {
	ctx := context.Background()
	for _, c := range w.clients {
		c.connect(ctx)
	}
	var async sync.WaitGroup
	for i := 0; i < len(w.plan.ops); i++ {
		w.step = i
		o := w.plan.ops[i]
		if o.async && i+1 < len(w.plan.ops) {
			async.Go(func() { w.do(ctx, o) }) // overlaps the next step
			w.count("async steps")
			continue
		}
		w.do(ctx, o)
		async.Wait()
		w.settle()
		w.check()
	}
	for _, c := range w.clients {
		c.close()
	}
	w.settle()
	w.checkReleased()
	w.hub.Close()
}

// settle waits until nothing moves; a client the plan made slow is let
// wake up.
func (w *tsimWorld) settle() {
	for range 100 {
		synctest.Wait()
		asleep := false
		for _, c := range w.clients {
			c.mu.Lock()
			asleep = asleep || c.asleep
			c.mu.Unlock()
		}
		if !asleep {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// do runs one step.
func (w *tsimWorld) do(ctx context.Context, o tsimOp) {
	name := tsimTopic(o.topic)
	c := w.clients[o.client]
	switch o.kind {
	case tsPublish:
		w.publish(ctx, name, o.n)
	case tsSubscribe:
		c.subscribe(ctx, name)
	case tsUnsubscribe:
		c.unsubscribe(ctx, name)
	case tsDrop:
		c.drop(o.server)
	case tsReconnect:
		if !c.up() {
			c.close()
			c.connect(ctx)
		}
	case tsEpoch:
		if l := w.store.log(name); l != nil {
			l.newEpoch()
			w.count("epoch changes")
		}
	case tsSlowBurst:
		c.mu.Lock()
		c.block = o.d
		c.mu.Unlock()
		w.publish(ctx, name, o.n)
	case tsSleep:
		time.Sleep(o.d)
	case tsRevoke:
		w.allowed[o.topic].Store(!w.allowed[o.topic].Load())
	}
}

// publish publishes n messages on name, each saying which it is.
func (w *tsimWorld) publish(ctx context.Context, name string, n int) {
	for range n {
		w.mu.Lock()
		w.stats["published"]++
		data := fmt.Sprintf(`{"t":%q,"k":%d}`, name, w.stats["published"])
		w.mu.Unlock()
		pos, err := w.hub.Publish(ctx, name, json.RawMessage(data))
		if err != nil {
			w.count("publish failed")
			continue
		}
		w.mu.Lock()
		w.published[tsimKey{name, pos}] = data
		w.mu.Unlock()
	}
}
