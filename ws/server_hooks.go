//go:build !js

package ws

import (
	"context"
	"net/http"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/internal/layerctx"
)

// connHooks runs the hooks of one connection of a Server, in the order its
// doc promises: the Server tracks the Peer (or refuses it while shutting
// down), then Peer.OnConnect runs, then, unless that refused the
// connection, Server.OnConnect.
type connHooks struct {
	s *Server
	c *Conn
	r *http.Request

	tracked   *jsonrpc.Peer // the Peer, once tracked: untracked at its end
	announced bool          // Server.OnConnect's turn came: OnDisconnect's will

	// ready lets ServeHTTP return once the hooks have run, with the value
	// of a panic in one of them (nil if none); readied says it was sent.
	ready   chan any
	readied bool
}

// done tells ServeHTTP that the hooks are over, once, and lets the request
// go: the connection needs nothing more of it.
func (h *connHooks) done(panicked any) {
	if h.readied {
		return
	}
	h.readied = true
	h.r = nil
	h.ready <- panicked
}

// options returns the Server's Peer options for this connection: its base
// context the request's, over Peer.BaseContext, and OnConnect the hooks.
func (h *connHooks) options() jsonrpc.Options {
	o := h.s.Peer
	top := h.r.Context()
	if h.s.BaseContext != nil {
		top = h.s.BaseContext(h.r)
	}
	o.BaseContext = layerctx.Over(top, h.s.Peer.BaseContext)
	o.OnConnect = h.onConnect
	return o
}

func (h *connHooks) onConnect(p *jsonrpc.Peer) {
	defer func() {
		v := recover()
		if v != nil {
			p.Close()
		}
		h.done(v)
	}()
	if !h.s.track(p, h.c) {
		h.c.SetCloseStatus(websocket.StatusGoingAway, "server shutting down")
		p.Close()
		return
	}
	h.tracked = p
	if h.s.Peer.OnConnect != nil {
		h.s.Peer.OnConnect(p)
		select {
		case <-p.Done():
			return // refused: the Server's OnConnect is not told of it
		default:
		}
	}
	h.announced = true
	if h.s.OnConnect != nil {
		h.s.OnConnect(p, h.r.WithContext(connCtx{Context: context.WithoutCancel(h.r.Context()), p: p}))
	}
}

// connCtx is the context of the request OnConnect gets: the request's
// values, ending with the connection instead of with the request, which
// net/http ends as soon as ServeHTTP returns (once the hooks have run:
// TestOnConnectRequestCtxLivesWithConnection). Contexts derived from it
// hang on the Peer's end hooks (AfterFunc), not on a goroutine each.
type connCtx struct {
	context.Context // the request's, without its cancellation
	p               *jsonrpc.Peer
}

func (c connCtx) Done() <-chan struct{} { return c.p.Done() }

func (c connCtx) Err() error {
	select {
	case <-c.p.Done():
		return context.Canceled
	default:
		return nil
	}
}

func (c connCtx) AfterFunc(f func()) (stop func() bool) { return c.p.AfterFunc(f) }
