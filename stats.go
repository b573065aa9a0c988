package jsonrpc

import "time"

// Stats is a snapshot of a Peer's queues and handlers, for metrics
// (Peer.Stats). Each field is read under its own lock: the fields are
// each exact, not necessarily of one instant together.
type Stats struct {
	// QueuedBytes are the bytes of inbound requests queued or being
	// served, counted against MaxQueuedBytes (Options.MaxQueuedBytes).
	QueuedBytes, MaxQueuedBytes int
	// OutboundBytes are the bytes of messages queued or being written,
	// counted against MaxOutboundBytes (Options.MaxOutboundBytes).
	OutboundBytes, MaxOutboundBytes int
	// Queued are the inbound jobs (a request, a batch, notifications)
	// waiting for a handler slot.
	Queued int
	// Active are the inbound jobs being served, Parked among them.
	Active int
	// Parked are the handlers waiting for a reply to a call of their own,
	// their slot given back.
	Parked int
	// Pending are this Peer's calls awaiting their reply.
	Pending int
	// PushBack is the time the read loop has spent not reading, since the
	// Peer started, because the inbound queue was over its budget.
	PushBack time.Duration
}

// Stats returns a snapshot of the Peer's queues and handlers. It is safe to
// call concurrently and at any time, after the connection ended too; it
// costs a few lock acquisitions, and nothing when it is not called.
func (p *Peer) Stats() Stats {
	s := Stats{MaxQueuedBytes: p.opts.MaxQueuedBytes, MaxOutboundBytes: p.opts.MaxOutboundBytes}
	d := &p.inbound
	d.mu.Lock()
	s.QueuedBytes, s.Queued, s.Active, s.Parked = d.bytes, d.queued, d.active, d.parked
	d.mu.Unlock()
	p.out.mu.Lock()
	s.OutboundBytes = p.out.bytes
	p.out.mu.Unlock()
	s.Pending = p.pending.len()
	s.PushBack = time.Duration(d.pushBack.Load())
	return s
}
