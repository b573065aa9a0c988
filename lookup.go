package jsonrpc

// Handler returns the Handler that serves what the other side sends:
// Options.Handler, or the empty Mux the Peer made when it had none. A
// library that registers methods on a Mux (topic.Follower, say) uses it to
// check that the Mux it was given is the one this connection is served by.
func (p *Peer) Handler() Handler { return p.handler }

// Lookup returns the Handler registered for method, or nil if there is
// none.
func (m *Mux) Lookup(method string) Handler {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.methods[method]
}
