//go:build !js

package ws

import (
	"context"
	"net/http"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
)

// DialOptions configure Dial.
type DialOptions struct {
	Options

	// HTTPClient makes the upgrade request. Default: http.DefaultClient.
	HTTPClient *http.Client

	// HTTPHeader is added to the upgrade request (an Origin or an
	// Authorization header, say).
	HTTPHeader http.Header
}

// Dial connects to the WebSocket JSON-RPC server at url (ws:// or wss://)
// and returns a Peer on the connection that serves h (nil: no methods).
// ctx bounds the handshake only; the connection lives until Close.
func Dial(ctx context.Context, url string, h jsonrpc.Handler, opts *DialOptions) (*jsonrpc.Peer, error) {
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	do := &websocket.DialOptions{HTTPClient: o.HTTPClient, HTTPHeader: o.HTTPHeader}
	if o.Compression {
		do.CompressionMode = websocket.CompressionNoContextTakeover
	}
	c, _, err := websocket.Dial(ctx, url, do)
	if err != nil {
		return nil, err
	}
	return jsonrpc.NewPeer(NewConn(c, &o.Options), h, o.Peer), nil
}
