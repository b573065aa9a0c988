package topic

import (
	"context"
	"fmt"

	"github.com/peerwire/jsonrpc"
)

// How a Follower knows that it is where the connection's messages go: a
// Follower that is not registered on the Mux serving the connection would
// lose every topic.message without a word (the Mux answers a notification
// it has no handler for with nothing), so Subscribe and Resubscribe check
// first, and fail with ErrNotRegistered:
//
//   - Register was never called: nothing can reach the Follower, since its
//     handlers are registered by Register alone;
//   - the connection's Handler is a *jsonrpc.Mux (jsonrpc.Peer.Handler)
//     that routes topic.message to nothing, or to another Follower.
//
// A connection whose Handler is not a *jsonrpc.Mux (a HandlerFunc that
// wraps one, say) cannot be looked into: then only the first check holds,
// and the application answers for routing topic.message to the Mux the
// Follower is registered on.

// followerHandler is the Handler Register puts on a Mux for one of the
// Follower's methods: served knows it by its type, and by f.
type followerHandler struct {
	f *Follower
	h jsonrpc.Handler
}

// ServeRPC serves the request with the Follower's handler.
func (fh *followerHandler) ServeRPC(ctx context.Context, req *jsonrpc.Request) (any, error) {
	return fh.h.ServeRPC(ctx, req)
}

// Register registers the Follower's handlers on m: the topic.message,
// topic.kicked and topic.presence notifications. m must be the Mux that
// serves the connections the Follower subscribes on (their
// jsonrpc.Options.Handler): Subscribe fails with ErrNotRegistered
// otherwise. Like Mux.Handle, it panics if m has these methods already
// (another Follower's, say).
func (f *Follower) Register(m *jsonrpc.Mux) {
	m.Handle(MethodMessage, &followerHandler{f: f, h: notification(f.message)})
	m.Handle(MethodKicked, &followerHandler{f: f, h: notification(f.kicked)})
	m.Handle(MethodPresence, &followerHandler{f: f, h: notification(f.presence)})
	f.registered.Store(true)
}

// notification is a Handler of a notification whose params are P.
func notification[P any](fn func(context.Context, P) error) jsonrpc.Handler {
	return jsonrpc.Typed(func(ctx context.Context, p P) (any, error) { return nil, fn(ctx, p) })
}

// served returns an error wrapping ErrNotRegistered if the messages of p's
// connection cannot reach the Follower (see above).
func (f *Follower) served(p *jsonrpc.Peer) error {
	if !f.registered.Load() {
		return fmt.Errorf("%w: Follower.Register was never called; call it on the Mux given as the connection's jsonrpc.Options.Handler", ErrNotRegistered)
	}
	m, ok := p.Handler().(*jsonrpc.Mux)
	if !ok {
		return nil // the application's own Handler: trusted to route to the Mux
	}
	switch h := m.Lookup(MethodMessage).(type) {
	case nil:
		return fmt.Errorf("%w: the connection's Mux has no %s handler; call Follower.Register on that Mux (the connection's jsonrpc.Options.Handler)", ErrNotRegistered, MethodMessage)
	case *followerHandler:
		if h.f != f {
			return fmt.Errorf("%w: the connection's Mux routes %s to another Follower", ErrNotRegistered, MethodMessage)
		}
	}
	return nil
}

// kicked handles topic.kicked: the server removed the connection from the
// topic; it is no longer followed, here or on the next connections.
func (f *Follower) kicked(ctx context.Context, k KickedParams) error {
	p := jsonrpc.PeerFromContext(ctx)
	f.mu.Lock()
	t := f.topics[k.Topic]
	if t == nil || t.peer != p { // not followed, or from an old connection
		f.mu.Unlock()
		return nil
	}
	delete(f.topics, k.Topic)
	if t.inflight > 0 { // each that succeeds is undone (follower_state.go)
		if f.kickedIn == nil {
			f.kickedIn = make(map[string]kickedIn)
		}
		f.kickedIn[k.Topic] = kickedIn{peer: p, n: t.inflight}
	}
	f.mu.Unlock()
	if f.OnError != nil {
		f.OnError(k.Topic, fmt.Errorf("%w %q: %.200q", ErrKicked, k.Topic, k.Reason))
	}
	return nil
}
