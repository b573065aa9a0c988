//go:build !js

package ws

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
)

// DialOptions configure Dial, with one plainly named field per thing
// configured: the Peer, its connection, the upgrade request. The zero value
// dials with the defaults. ClientOptions has the same fields, and Server
// the first two.
//
//	ws.Dial(ctx, url, ws.DialOptions{Peer: jsonrpc.Options{Handler: mux}})
type DialOptions struct {
	// Peer configures the Peer: its Handler (for the methods the server
	// calls back), limits and Logger. Default: a Peer that serves nothing.
	Peer jsonrpc.Options

	// Conn configures the WebSocket connection: message size, keepalive,
	// compression. Default: the defaults of Options.
	Conn Options

	// HTTPClient makes the upgrade request. Default: http.DefaultClient.
	HTTPClient *http.Client

	// HTTPHeader is added to the upgrade request (an Origin or an
	// Authorization header, say). Default: none.
	HTTPHeader http.Header
}

// Dial connects to the WebSocket JSON-RPC server at url (ws:// or wss://)
// and returns a Peer on the connection, configured by opts (optional: at
// most one). ctx bounds the handshake only; the connection lives until
// Close. A handshake that the server refuses with an HTTP status fails with
// a *StatusError (TestDialWrongPathIsStatusError).
//
//	peer, err := ws.Dial(ctx, "ws://127.0.0.1:8080/rpc")
func Dial(ctx context.Context, url string, opts ...DialOptions) (*jsonrpc.Peer, error) {
	p, _, err := dial(ctx, url, oneOf(opts))
	return p, err
}

// dial is Dial, which also returns the Peer's Conn.
func dial(ctx context.Context, url string, o DialOptions) (*jsonrpc.Peer, *Conn, error) {
	if err := checkURL(url); err != nil {
		return nil, nil, err
	}
	client := http.DefaultClient
	if o.HTTPClient != nil {
		client = o.HTTPClient
	}
	rt := &upgradeRecorder{base: client.Transport}
	hc := *client
	hc.Transport = rt
	do := &websocket.DialOptions{HTTPClient: &hc, HTTPHeader: o.HTTPHeader}
	if o.Conn.Compression {
		do.CompressionMode = websocket.CompressionNoContextTakeover
	}
	conn := new(Conn)
	conn.listen(&do.OnPingReceived, &do.OnPongReceived)
	// The connection's remote address, for Conn.RemoteAddr: net/http
	// hands the connection of the upgrade to the trace.
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
		conn.remote = ci.Conn.RemoteAddr()
	}})
	c, resp, err := websocket.Dial(ctx, url, do)
	if err != nil {
		if se := statusError(resp); se != nil {
			return nil, nil, se
		}
		return nil, nil, err
	}
	conn.init(c, rt.conn, &o.Conn)
	return jsonrpc.NewPeer(conn, o.Peer), conn, nil
}

// upgradeRecorder keeps the connection of the upgrade response, which
// coder/websocket takes over, so that Conn.Close can drop it when the close
// handshake goes unanswered, and read from it when it lingers.
type upgradeRecorder struct {
	base http.RoundTripper // nil: http.DefaultTransport
	conn io.ReadWriteCloser
}

func (u *upgradeRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	base := u.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
		if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
			u.conn = rwc
		}
	}
	return resp, err
}
