//go:build js

package ws

import (
	"context"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
)

// DialOptions configure Dial. In the browser, the browser makes the upgrade
// request, so only the Peer's and the connection's options apply.
type DialOptions struct {
	// Peer configures the Peer: its Handler, limits and Logger. Default: a
	// Peer that serves nothing.
	Peer jsonrpc.Options

	// Conn configures the WebSocket connection. Default: the defaults of
	// Options.
	Conn Options
}

// Dial connects to the WebSocket JSON-RPC server at url (ws:// or wss://)
// with the browser's WebSocket and returns a Peer on the connection,
// configured by opts (optional: at most one). ctx bounds the handshake only.
func Dial(ctx context.Context, url string, opts ...DialOptions) (*jsonrpc.Peer, error) {
	p, _, err := dial(ctx, url, oneOf(opts))
	return p, err
}

// dial is Dial, which also returns the Peer's Conn.
func dial(ctx context.Context, url string, o DialOptions) (*jsonrpc.Peer, *Conn, error) {
	if err := checkURL(url); err != nil {
		return nil, nil, err
	}
	o.Conn.PingInterval = -1 // browsers answer pings; they cannot send them
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, nil, err
	}
	conn := NewConn(c, o.Conn)
	return jsonrpc.NewPeer(conn, o.Peer), conn, nil
}
