package otel

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"weak"

	"github.com/peerwire/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// state is what the observable instruments read: the Peers observed, the
// counters of the servers and hubs observed, and the push-back time of the
// Peers that have ended.
type state struct {
	mu         sync.Mutex
	peers      map[*jsonrpc.Peer]struct{}
	ended      map[weak.Pointer[jsonrpc.Peer]]struct{} // observed and ended, until collected
	sessions   []source
	websockets []source
	topics     []source
	retired    float64 // seconds of push-back of ended Peers
	reg        metric.Registration

	slow       metric.Int64Counter // peerwire.jsonrpc.slow_consumers
	reconnects metric.Int64Counter // peerwire.jsonrpc.reconnect.attempts
}

// A source is a server or hub observed, and the count it gives.
type source struct {
	v     any
	count func() int
}

// Observe adds p's queues and handlers to the state metrics until its
// connection ends; put it in Options.OnConnect (OnConnect: tel.Observe), or
// call it once the Peer exists. Observing a Peer twice counts it once, also
// after its end (TestObserveAfterEndCountsSlowConsumerOnce); the Telemetry
// keeps nothing of a Peer once it has ended and been collected.
func (t *Telemetry) Observe(p *jsonrpc.Peer) {
	wp := weak.Make(p)
	t.state.mu.Lock()
	_, live := t.state.peers[p]
	_, ended := t.state.ended[wp]
	if live || ended {
		t.state.mu.Unlock()
		return
	}
	t.state.peers[p] = struct{}{}
	t.state.mu.Unlock()
	p.AfterFunc(func() {
		t.state.mu.Lock()
		if _, ok := t.state.peers[p]; ok {
			delete(t.state.peers, p)
			t.state.retired += p.Stats().PushBack.Seconds()
			t.state.ended[wp] = struct{}{}
			runtime.AddCleanup(p, t.forget, wp)
		}
		t.state.mu.Unlock()
		// The cause, once the handlers (whose ctx has ended) return; on
		// this goroutine of AfterFunc's own.
		if errors.Is(p.Wait(), jsonrpc.ErrSlowConsumer) {
			t.state.slow.Add(context.Background(), 1, metric.WithAttributeSet(attribute.NewSet(attrSystem)))
		}
	})
}

// forget drops an ended Peer that has been collected.
func (t *Telemetry) forget(wp weak.Pointer[jsonrpc.Peer]) {
	t.state.mu.Lock()
	delete(t.state.ended, wp)
	t.state.mu.Unlock()
}

// ObserveSessions adds the sessions s holds (an *httprpc.SessionServer) to
// peerwire.jsonrpc.sessions, until Close. Observing s twice counts it once.
func (t *Telemetry) ObserveSessions(s interface{ Sessions() int }) {
	t.observe(&t.state.sessions, s, s.Sessions)
}

// ObserveWebSockets adds the connections s serves (a *ws.Server; see its
// Connections) to peerwire.jsonrpc.websocket.connections, until Close.
// Observing s twice counts it once.
func (t *Telemetry) ObserveWebSockets(s interface{ Connections() int }) {
	t.observe(&t.state.websockets, s, s.Connections)
}

// ObserveTopics adds the topics h holds open (a *topic.Hub; see its
// Topics) to peerwire.jsonrpc.topics, until Close. Observing h twice
// counts it once (TestObserveTopicsTwiceCountsOnce).
func (t *Telemetry) ObserveTopics(h interface{ Topics() int }) {
	t.observe(&t.state.topics, h, h.Topics)
}

// observe adds v to list unless it is there already.
func (t *Telemetry) observe(list *[]source, v any, count func() int) {
	t.state.mu.Lock()
	defer t.state.mu.Unlock()
	for _, s := range *list {
		if same(s.v, v) {
			return
		}
	}
	*list = append(*list, source{v: v, count: count})
}

// same reports whether a and b are the same value; values of a type that
// cannot be compared are never the same.
func same(a, b any) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return a == b
}

// Close unregisters the state metrics from the MeterProvider: their
// instruments report nothing more, and the Peers, servers and hubs
// observed are let go. Spans and the duration histograms are not
// affected. A Telemetry that a program makes for its life needs no Close;
// one made per test, or per tenant, does (TestCloseUnregistersState).
func (t *Telemetry) Close() error {
	t.state.mu.Lock()
	reg := t.state.reg
	t.state.reg = nil
	t.state.peers = map[*jsonrpc.Peer]struct{}{}
	t.state.sessions, t.state.websockets, t.state.topics = nil, nil, nil
	t.state.mu.Unlock()
	if reg == nil {
		return nil
	}
	if err := reg.Unregister(); err != nil {
		return fmt.Errorf("otel: failed to unregister the state metrics: %w", err)
	}
	return nil
}

// stateInstruments registers the observable instruments of the state
// metrics, all read by one callback.
func (t *Telemetry) stateInstruments() error {
	t.state.peers = map[*jsonrpc.Peer]struct{}{}
	t.state.ended = map[weak.Pointer[jsonrpc.Peer]]struct{}{}
	m := t.meter
	var errs []error
	gauge := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		g, err := m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	conns := gauge("peerwire.jsonrpc.connections", "{connection}", "Open connections of the Peers observed.")
	sessions := gauge("peerwire.jsonrpc.sessions", "{session}", "Sessions held by the session servers observed.")
	websockets := gauge("peerwire.jsonrpc.websocket.connections", "{connection}", "Connections served by the WebSocket servers observed.")
	topics := gauge("peerwire.jsonrpc.topics", "{topic}", "Topics open in the hubs observed.")
	inBytes := gauge("peerwire.jsonrpc.inbound.queued", "By", "Bytes of inbound requests queued or being served.")
	inLimit := gauge("peerwire.jsonrpc.inbound.limit", "By", "The inbound budgets (Options.MaxQueuedBytes), summed.")
	outBytes := gauge("peerwire.jsonrpc.outbound.queued", "By", "Bytes of messages queued or being written.")
	outLimit := gauge("peerwire.jsonrpc.outbound.limit", "By", "The outbound budgets (Options.MaxOutboundBytes), summed.")
	queued := gauge("peerwire.jsonrpc.handlers.queued", "{job}", "Inbound jobs waiting for a handler slot.")
	active := gauge("peerwire.jsonrpc.handlers.active", "{job}", "Inbound jobs being served, parked ones included.")
	parked := gauge("peerwire.jsonrpc.handlers.parked", "{handler}", "Handlers waiting for a reply to a call of their own.")
	pending := gauge("peerwire.jsonrpc.calls.pending", "{call}", "Calls sent and awaiting their reply.")
	var err error
	t.state.slow, err = m.Int64Counter("peerwire.jsonrpc.slow_consumers", metric.WithUnit("{connection}"),
		metric.WithDescription("Connections of the Peers observed that ended because the remote side did not read (jsonrpc.ErrSlowConsumer)."))
	errs = append(errs, err)
	t.state.reconnects, err = m.Int64Counter("peerwire.jsonrpc.reconnect.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts to connect again of the WebSocket clients observed: one after a connection ends, one after each failed attempt."))
	errs = append(errs, err)
	pushBack, err := m.Float64ObservableCounter("peerwire.jsonrpc.push_back.duration", metric.WithUnit("s"),
		metric.WithDescription("Time the read loops spent not reading because the inbound queue was over its budget."))
	errs = append(errs, err)
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("otel: failed to make a state instrument: %w", err)
		}
	}
	t.state.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		t.state.mu.Lock()
		defer t.state.mu.Unlock()
		var sum jsonrpc.Stats
		for p := range t.state.peers {
			s := p.Stats()
			sum.QueuedBytes += s.QueuedBytes
			sum.MaxQueuedBytes += s.MaxQueuedBytes
			sum.OutboundBytes += s.OutboundBytes
			sum.MaxOutboundBytes += s.MaxOutboundBytes
			sum.Queued += s.Queued
			sum.Active += s.Active
			sum.Parked += s.Parked
			sum.Pending += s.Pending
			sum.PushBack += s.PushBack
		}
		o.ObserveInt64(conns, int64(len(t.state.peers)), metric.WithAttributes(attrSystem))
		o.ObserveInt64(sessions, int64(sum0(t.state.sessions)), metric.WithAttributes(attrSystem))
		o.ObserveInt64(websockets, int64(sum0(t.state.websockets)), metric.WithAttributes(attrSystem))
		o.ObserveInt64(topics, int64(sum0(t.state.topics)), metric.WithAttributes(attrSystem))
		for g, v := range map[metric.Int64ObservableUpDownCounter]int{
			inBytes: sum.QueuedBytes, inLimit: sum.MaxQueuedBytes, outBytes: sum.OutboundBytes, outLimit: sum.MaxOutboundBytes,
			queued: sum.Queued, active: sum.Active, parked: sum.Parked, pending: sum.Pending,
		} {
			o.ObserveInt64(g, int64(v), metric.WithAttributes(attrSystem))
		}
		o.ObserveFloat64(pushBack, t.state.retired+sum.PushBack.Seconds(), metric.WithAttributes(attrSystem))
		return nil
	}, conns, sessions, websockets, topics, inBytes, inLimit, outBytes, outLimit, queued, active, parked, pending, pushBack)
	if err != nil {
		return fmt.Errorf("otel: failed to register the state callback: %w", err)
	}
	return nil
}

// sum0 returns the sum of what the sources count.
func sum0(srcs []source) int {
	n := 0
	for _, s := range srcs {
		n += s.count()
	}
	return n
}
