//go:build !js

package ws

import (
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
		h.s.OnConnect(p, h.r)
	}
}
