//go:build js

package ws

import (
	"context"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
)

// DialOptions configure Dial. In the browser, the browser makes the upgrade
// request, so only the connection's Options apply.
type DialOptions struct {
	Options
}

// Dial connects to the WebSocket JSON-RPC server at url (ws:// or wss://)
// with the browser's WebSocket and returns a Peer on the connection that
// serves h (nil: no methods). ctx bounds the handshake only.
func Dial(ctx context.Context, url string, h jsonrpc.Handler, opts *DialOptions) (*jsonrpc.Peer, error) {
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	o.PingInterval = -1 // browsers answer pings; they cannot send them
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	return jsonrpc.NewPeer(NewConn(c, &o.Options), h, o.Peer), nil
}
