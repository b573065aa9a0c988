package httprpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/peerwire/jsonrpc"
)

// Client calls a JSON-RPC server over plain HTTP POST: each Call, Notify
// or Batch is one POST, whose response body holds the reply. Its methods
// have the signatures and the semantics of jsonrpc.Peer's (each runs on a
// Peer of its own, over a connection that carries one POST), so a batch is
// matched by id, an error reply is a *jsonrpc.Error, and
// ClientOptions.Peer's Interceptors see every call. A status other than
// 2xx fails with an error wrapping a *StatusError.
//
// A Client is safe for concurrent use: calls run at once, each on a
// connection of the http.Client's pool, which keeps them alive between
// calls (every response body is read to its end and closed). It holds
// nothing between calls, so it needs no Close.
type Client struct {
	url    string
	hc     *http.Client
	header http.Header
	opts   jsonrpc.Options
	max    int64
}

// ClientOptions configure a Client. The zero value gives the defaults.
type ClientOptions struct {
	// HTTPClient sends the requests. Default: http.DefaultClient.
	HTTPClient *http.Client

	// Header is added to every request (an Authorization token, say).
	// Content-Type and Accept are application/json. Default: none.
	Header http.Header

	// Peer configures the Peer each call runs on: its Interceptors (which
	// see every outbound call and notification), Logger, MaxBatch and
	// MaxPending. Its Handler goes unused (a server cannot call back over
	// plain POST), and so does Cancel: a call whose ctx ends aborts its
	// POST, which a Server sees as the client going away.
	Peer jsonrpc.Options

	// MaxMessageSize bounds a request (a Call longer fails at once with
	// an error wrapping jsonrpc.ErrMessageTooLarge) and a reply (a longer
	// one fails the call with such an error, unread). Default: 4 MiB, a
	// Server's default MaxBodySize. A negative value means no limit.
	MaxMessageSize int64
}

// StatusError is the error of an HTTP request answered with a status
// other than 2xx: the server (or a proxy, or middleware) refused it before
// JSON-RPC, or failed outside it. A Client's Call, Notify and Batch return
// an error wrapping one (405, 413, 415, 503 from a Server; 401 from
// middleware). A Peer that Dial returned ends with a cause wrapping one
// when the server refuses a POST or a GET for good (see Dial); its calls
// then fail with an error wrapping both jsonrpc.ErrClosed and the
// StatusError, which errors.As finds.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
	// Body is the start of the response body (at most 1 KiB), which
	// usually says why.
	Body []byte
	// Method is the HTTP method of the request refused: POST, or GET
	// (a Dial'd Peer's event streams).
	Method string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("httprpc: HTTP status %d %s: %q", e.Code, http.StatusText(e.Code), e.Body)
}

// noMethods is the Handler of a Client's Peers: a server cannot call back
// over plain POST.
var noMethods = jsonrpc.NewMux()

// NewClient returns a Client that posts to url, configured by opts (at
// most one).
//
//	c := httprpc.NewClient("http://127.0.0.1:8080/rpc")
//	var sum int
//	err := c.Call(ctx, "add", []int{1, 2}, &sum)
func NewClient(url string, opts ...ClientOptions) *Client {
	if len(opts) > 1 {
		panic("httprpc: more than one ClientOptions")
	}
	var o ClientOptions
	if len(opts) == 1 {
		o = opts[0]
	}
	c := &Client{url: url, hc: o.HTTPClient, header: o.Header, opts: o.Peer, max: o.MaxMessageSize}
	if c.hc == nil {
		c.hc = http.DefaultClient
	}
	switch {
	case c.max == 0:
		c.max = DefaultMaxBodySize
	case c.max < 0:
		c.max = -1
	}
	c.opts.Handler = noMethods // one for every call, not one each
	if c.opts.Logger == nil {
		c.opts.Logger = silent
	}
	c.opts.Cancel = nil
	c.opts.OnConnect = nil
	c.opts.DrainTimeout = -1 // nothing to drain: a client Peer serves nothing
	return c
}

// Call posts a call of method with params (nil for none, else a value that
// marshals to a JSON object or array) and unmarshals the result into
// result (nil to discard it), as jsonrpc.Peer's Call does. An error reply
// is returned as a *jsonrpc.Error. When ctx ends first, the POST is
// aborted and Call returns ctx's error.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.do(ctx, func(p *jsonrpc.Peer) error { return p.Call(ctx, method, params, result) })
}

// Notify posts a notification, as jsonrpc.Peer's Notify does, and returns
// once the server has answered (a Server does once the handler has
// returned).
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.do(ctx, func(p *jsonrpc.Peer) error { return p.Notify(ctx, method, params) })
}

// Batch posts elems as one batch, as jsonrpc.Peer's Batch does: replies
// are matched by id, each element's outcome is in its Error and Result,
// and a batch of notifications only is answered with no body. When the
// POST fails as a whole (a status other than 2xx, a network error), Batch
// returns that error and, as a Peer's Batch cut short, leaves the elements
// unanswered.
func (c *Client) Batch(ctx context.Context, elems []jsonrpc.BatchElem) error {
	return c.do(ctx, func(p *jsonrpc.Peer) error { return p.Batch(ctx, elems) })
}

// do runs f on a Peer over a one-shot connection and returns what it
// returned, or, when the POST itself failed, why.
func (c *Client) do(ctx context.Context, f func(*jsonrpc.Peer) error) error {
	cc := newCallConn(ctx, c)
	p := jsonrpc.NewPeer(cc, c.opts)
	err := f(p)
	p.Close()
	_ = p.Wait()
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	if perr := cc.failure(); perr != nil {
		return perr
	}
	if errors.Is(err, jsonrpc.ErrClosed) && cc.noReply() {
		return fmt.Errorf("httprpc: the response holds no reply to the call: %w", err)
	}
	return err
}
