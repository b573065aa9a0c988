package otel

import (
	"context"
	"fmt"
	"sync"

	"github.com/peerwire/jsonrpc"
	"go.opentelemetry.io/otel/metric"
)

// state is what the observable instruments read: the Peers observed, the
// session counters, and the push-back time of the Peers that have ended.
type state struct {
	mu       sync.Mutex
	peers    map[*jsonrpc.Peer]struct{}
	sessions []func() int
	retired  float64 // seconds of push-back of ended Peers
}

// Observe adds p's queues and handlers to the state metrics until its
// connection ends; put it in Options.OnConnect (OnConnect: tel.Observe), or
// call it once the Peer exists. Observing a Peer twice counts it once.
func (t *Telemetry) Observe(p *jsonrpc.Peer) {
	t.state.mu.Lock()
	if _, ok := t.state.peers[p]; ok {
		t.state.mu.Unlock()
		return
	}
	t.state.peers[p] = struct{}{}
	t.state.mu.Unlock()
	p.AfterFunc(func() {
		t.state.mu.Lock()
		defer t.state.mu.Unlock()
		if _, ok := t.state.peers[p]; ok {
			delete(t.state.peers, p)
			t.state.retired += p.Stats().PushBack.Seconds()
		}
	})
}

// ObserveSessions adds the sessions s holds (an *httprpc.SessionServer) to
// peerwire.jsonrpc.sessions, for the life of the Telemetry.
func (t *Telemetry) ObserveSessions(s interface{ Sessions() int }) {
	t.state.mu.Lock()
	t.state.sessions = append(t.state.sessions, s.Sessions)
	t.state.mu.Unlock()
}

// stateInstruments registers the observable instruments of the state
// metrics, all read by one callback.
func (t *Telemetry) stateInstruments() error {
	t.state.peers = map[*jsonrpc.Peer]struct{}{}
	m := t.meter
	var errs []error
	gauge := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		g, err := m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	conns := gauge("peerwire.jsonrpc.connections", "{connection}", "Open connections of the Peers observed.")
	sessions := gauge("peerwire.jsonrpc.sessions", "{session}", "Sessions held by the session servers observed.")
	inBytes := gauge("peerwire.jsonrpc.inbound.queued", "By", "Bytes of inbound requests queued or being served.")
	inLimit := gauge("peerwire.jsonrpc.inbound.limit", "By", "The inbound budgets (Options.MaxQueuedBytes), summed.")
	outBytes := gauge("peerwire.jsonrpc.outbound.queued", "By", "Bytes of messages queued or being written.")
	outLimit := gauge("peerwire.jsonrpc.outbound.limit", "By", "The outbound budgets (Options.MaxOutboundBytes), summed.")
	queued := gauge("peerwire.jsonrpc.handlers.queued", "{job}", "Inbound jobs waiting for a handler slot.")
	active := gauge("peerwire.jsonrpc.handlers.active", "{job}", "Inbound jobs being served, parked ones included.")
	parked := gauge("peerwire.jsonrpc.handlers.parked", "{handler}", "Handlers waiting for a reply to a call of their own.")
	pending := gauge("peerwire.jsonrpc.calls.pending", "{call}", "Calls sent and awaiting their reply.")
	pushBack, err := m.Float64ObservableCounter("peerwire.jsonrpc.push_back.duration", metric.WithUnit("s"),
		metric.WithDescription("Time the read loops spent not reading because the inbound queue was over its budget."))
	errs = append(errs, err)
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("otel: failed to make a state instrument: %w", err)
		}
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
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
		n := 0
		for _, f := range t.state.sessions {
			n += f()
		}
		o.ObserveInt64(conns, int64(len(t.state.peers)), metric.WithAttributes(attrSystem))
		o.ObserveInt64(sessions, int64(n), metric.WithAttributes(attrSystem))
		for g, v := range map[metric.Int64ObservableUpDownCounter]int{
			inBytes: sum.QueuedBytes, inLimit: sum.MaxQueuedBytes, outBytes: sum.OutboundBytes, outLimit: sum.MaxOutboundBytes,
			queued: sum.Queued, active: sum.Active, parked: sum.Parked, pending: sum.Pending,
		} {
			o.ObserveInt64(g, int64(v), metric.WithAttributes(attrSystem))
		}
		o.ObserveFloat64(pushBack, t.state.retired+sum.PushBack.Seconds(), metric.WithAttributes(attrSystem))
		return nil
	}, conns, sessions, inBytes, inLimit, outBytes, outLimit, queued, active, parked, pending, pushBack)
	if err != nil {
		return fmt.Errorf("otel: failed to register the state callback: %w", err)
	}
	return nil
}
