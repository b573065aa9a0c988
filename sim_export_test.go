package jsonrpc

// What the simulation harness (sim_test.go, package jsonrpc_test) reads of
// a Peer's insides to check its memory bound.

// RetainedBytes returns the bytes p holds against its budgets right now:
// inbound requests queued or running, the replies of the inbound batches
// being served (charged as for MaxQueuedBytes) and handlers' replies
// waiting for room to be written,
// outbound messages queued or being written (MaxOutboundBytes), and the
// read loop's own replies and cancel notifications not yet written (the
// control budget, maxControlBytes).
func RetainedBytes(p *Peer) (inbound, outbound, control int) {
	p.inbound.mu.Lock()
	inbound = p.inbound.bytes + p.inbound.replyBytes
	p.inbound.mu.Unlock()
	p.out.mu.Lock()
	outbound, control = p.out.bytes, p.out.ctlBytes
	p.out.mu.Unlock()
	return inbound, outbound, control
}

// MaxControlBytes is the control budget RetainedBytes's control is held to.
const MaxControlBytes = maxControlBytes
