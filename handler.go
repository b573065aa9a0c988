package jsonrpc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// A Handler serves the requests a Peer receives. For a call, the result is
// marshalled with encoding/json (a json.RawMessage goes as is) and a non-nil
// error is mapped by Options.MapError; for a notification both are
// discarded. ServeRPC may be called concurrently; see Peer for what runs
// concurrently and what is ordered.
type Handler interface {
	ServeRPC(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// ServeRPC calls f(ctx, req).
func (f HandlerFunc) ServeRPC(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

var _ Handler = HandlerFunc(nil)

// Mux is a Handler that routes requests by method name. Its zero value is
// an empty Mux ready to use; it is safe for concurrent use, and methods may
// be added while it serves. An unknown method gets Method not found.
type Mux struct {
	mu      sync.RWMutex
	methods map[string]Handler
	desc    describer     // read by Methods, Sent, Topics only (describe.go)
	gen     atomic.Uint64 // changes: see Generation
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{} }

// Handle registers h for method. As http.ServeMux does for its patterns,
// it panics on a programmer's mistake: a method name that is empty or
// begins with "rpc." (reserved by the specification; the panic value
// wraps ErrReservedMethod), a nil h, or a method registered twice.
func (m *Mux) Handle(method string, h Handler) {
	switch {
	case strings.HasPrefix(method, "rpc."):
		panic(fmt.Errorf("%w: %q", ErrReservedMethod, method))
	case method == "":
		panic("jsonrpc: empty method name")
	case h == nil:
		panic(fmt.Sprintf("jsonrpc: nil handler for %q", method))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen.Add(1)
	if _, dup := m.methods[method]; dup {
		panic(fmt.Sprintf("jsonrpc: method %q registered twice", method))
	}
	if m.methods == nil {
		m.methods = make(map[string]Handler)
	}
	m.methods[method] = h
}

// MethodDiscover is the method of OpenRPC's service discovery, the one
// name beginning with "rpc." that a Mux serves, and only when asked to by
// HandleDiscover (package openrpc's Serve).
const MethodDiscover = "rpc.discover"

// HandleDiscover registers h for rpc.discover (MethodDiscover), which
// Handle refuses as it refuses every "rpc." name: serving a description of
// the Mux is the user's choice, never a default. It panics if rpc.discover
// is registered already or h is nil.
func (m *Mux) HandleDiscover(h Handler) {
	if h == nil {
		panic("jsonrpc: nil handler for rpc.discover")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen.Add(1)
	if _, dup := m.methods[MethodDiscover]; dup {
		panic("jsonrpc: rpc.discover registered twice")
	}
	if m.methods == nil {
		m.methods = make(map[string]Handler)
	}
	m.methods[MethodDiscover] = h
}

// HandleFunc registers f for method, as Handle does.
func (m *Mux) HandleFunc(method string, f func(ctx context.Context, req *Request) (any, error)) {
	m.Handle(method, HandlerFunc(f))
}

// ServeRPC dispatches req to the handler registered for its method.
func (m *Mux) ServeRPC(ctx context.Context, req *Request) (any, error) {
	m.mu.RLock()
	h := m.methods[req.Method]
	m.mu.RUnlock()
	if h == nil {
		return nil, errMethodNotFound()
	}
	return h.ServeRPC(ctx, req)
}

var _ Handler = (*Mux)(nil)

type peerKey struct{}

// PeerFromContext returns the Peer serving the handler whose ctx this is (or
// a ctx derived from it), so that the handler can call or notify the other
// side. It returns nil for any other ctx.
func PeerFromContext(ctx context.Context) *Peer {
	p, _ := ctx.Value(peerKey{}).(*Peer)
	return p
}

// RequestFromContext returns the request that the handler whose ctx this is
// (or a ctx derived from it) serves: its id and method, for a typed handler
// that wants them (a progress token, a log line). It returns nil for any
// other ctx. The handler must not change the Request.
func RequestFromContext(ctx context.Context) *Request {
	if h, _ := ctx.Value(handlerKey{}).(*handlerCtx); h != nil {
		return h.req
	}
	return nil
}
