package ws

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/peerwire/jsonrpc"
)

// A Client is one logical client that outlives its connections: it dials
// the server, and whenever the connection ends it dials again, with
// exponential backoff and jitter, until Close. It builds for the browser
// (js/wasm) as well, where Dial uses the browser's WebSocket.
//
// What survives a drop, and what does not:
//
//   - A call made while the Client is (re)connecting waits for the next
//     connection, within its ctx; so does a call that the connection
//     ended under before it was written (the old Peer draining its
//     handlers after the server closed, say). If ctx ends first, the
//     call's error wraps both ctx's error and why there is no connection:
//     the last attempt's failure, a *StatusError say
//     (TestClientCallNamesLastFailure).
//   - An attempt that the server refuses in a way that will not change (a
//     wrong path, 404; credentials refused, 401 or 403) ends the Client
//     at once, with that error (see ClientOptions.GiveUp): its calls
//     return it, and so does Err.
//   - A call in flight when the connection drops ends exactly once: Call
//     returns an error wrapping ErrDropped (the server may or may not have
//     run it), and CallIdempotent sends it again on the next connection
//     (for methods that are safe to run twice). A reply is never delivered
//     twice: each attempt is a new request on a new connection.
//   - Calls and notifications the server sent to the old connection are
//     gone with it; a server that needs at-least-once delivery numbers its
//     messages and lets the client ask for what it missed in OnConnect.
//   - OnConnect runs on every connection before calls flow on it:
//     authenticate and re-subscribe there.
//   - A handler of the Client's (a method the server calls back) that is
//     still running when its connection ends is not waited for: it keeps
//     running, owned by the old Peer, with its ctx cancelled, and what it
//     returns goes nowhere. The Client dials again as soon as the
//     connection has ended, and Close returns without waiting for it.
type Client struct {
	url  string
	opts ClientOptions

	mu         sync.Mutex
	peer       *jsonrpc.Peer // the connection calls go to; nil while (re)connecting
	conn       *Conn         // peer's Conn
	ready      chan struct{} // closed when peer is set, or the Client closes
	state      State
	reconnects int
	closeErr   error // why the Client closed
	last       error // why the last attempt failed, or the last connection ended

	ctx    context.Context // the dialer's; Close cancels it
	cancel context.CancelFunc
	done   chan struct{} // closed when the dialer has stopped
}

// NewClient returns a Client of the server at url (ws:// or wss://),
// configured by opts (optional: at most one). It returns at once and dials
// in the background; calls wait for the first connection.
//
//	c := ws.NewClient("ws://127.0.0.1:8080/rpc", ws.ClientOptions{OnConnect: login})
//	defer c.Close()
//	err := c.Call(ctx, "board.list", nil, &notes)
func NewClient(url string, opts ...ClientOptions) *Client {
	var o ClientOptions
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		panic("ws: more than one ClientOptions")
	}
	c := &Client{
		url:   url,
		opts:  o.withDefaults(),
		ready: make(chan struct{}),
		done:  make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.run() // owned by the Client: Close ends it and waits for it
	return c
}

// Call calls method on the server, as Peer.Call does, waiting within ctx
// for a connection if there is none. If the connection drops while the
// call is in flight, Call returns an error wrapping ErrDropped.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.call(ctx, method, params, result, false)
}

// CallIdempotent is Call for a method that is safe to run more than once:
// if the connection drops while the call is in flight, it is sent again on
// the next connection, until it gets its reply or ctx ends.
func (c *Client) CallIdempotent(ctx context.Context, method string, params, result any) error {
	return c.call(ctx, method, params, result, true)
}

func (c *Client) call(ctx context.Context, method string, params, result any, again bool) error {
	for {
		p, conn, err := c.current(ctx)
		if err != nil {
			return err
		}
		sent := conn.written.Load()
		err = p.Call(ctx, method, params, result)
		if err == nil || ctx.Err() != nil || !errors.Is(err, jsonrpc.ErrClosed) {
			return err
		}
		c.forget(p) // it has ended: don't take it again
		if !again && conn.written.Load() != sent {
			// Something was written meanwhile, which may have been this
			// call: the server may have run it.
			return fmt.Errorf("%w: %w", ErrDropped, err)
		}
		// Never written, or safe to run again: on the next connection.
	}
}

// Notify sends a notification on the current connection, waiting within
// ctx for one if there is none. If the connection ends before it is
// written, it goes on the next connection.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	for {
		p, conn, err := c.current(ctx)
		if err != nil {
			return err
		}
		sent := conn.written.Load()
		err = p.Notify(ctx, method, params)
		if err == nil || ctx.Err() != nil || !errors.Is(err, jsonrpc.ErrClosed) || conn.written.Load() != sent {
			return err
		}
		c.forget(p)
	}
}

// Peer returns the current connection's Peer, waiting within ctx while the
// Client connects. It fails with ErrClientClosed (or the reason the Client
// gave up) once the Client is closed.
func (c *Client) Peer(ctx context.Context) (*jsonrpc.Peer, error) {
	p, _, err := c.current(ctx)
	return p, err
}

// current returns the current connection's Peer and Conn, as Peer does. A
// connection that has ended is never returned, even while its Peer is
// still draining its handlers: nothing sent on it could be answered.
func (c *Client) current(ctx context.Context) (*jsonrpc.Peer, *Conn, error) {
	for {
		c.mu.Lock()
		p, conn, ready, state, cerr := c.peer, c.conn, c.ready, c.state, c.closeErr
		c.mu.Unlock()
		if state == Closed {
			return nil, nil, cerr
		}
		if p != nil {
			select {
			case <-p.Done(): // ended: the dialer is about to notice
			case <-conn.gone:
			default:
				return p, conn, nil
			}
			c.forget(p)
			continue
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, nil, c.waitErr(ctx)
		}
	}
}

// waitErr is the error of a caller whose ctx ended while it waited for a
// connection: ctx's error, and why there is no connection, both wrapped.
func (c *Client) waitErr(ctx context.Context) error {
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	if last == nil {
		return fmt.Errorf("ws: no connection to %s yet (the first attempt is under way): %w", redact(c.url), ctx.Err())
	}
	return fmt.Errorf("ws: no connection to %s: %w, after %w", redact(c.url), ctx.Err(), last)
}

// forget stops handing out p, whose connection has ended. Whoever sees the
// end first (a caller, or the dialer) changes the state, so that a caller
// that got ErrDropped never sees Connected for the connection it lost; the
// dialer tells OnState.
func (c *Client) forget(p *jsonrpc.Peer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.peer == p {
		c.peer, c.conn = nil, nil
		c.ready = make(chan struct{})
		if c.state == Connected {
			c.state = Reconnecting
		}
	}
}

// State returns the Client's connection state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Reconnects returns how many times the Client has connected again after
// its first connection.
func (c *Client) Reconnects() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconnects
}

// Close closes the current connection and stops reconnecting. Calls
// waiting for a connection return ErrClientClosed; calls in flight end as
// the connection does. Close waits for the Client's goroutine (at most the
// 1 s a close handshake may take), not for the handlers of its connections
// still running (see Client), and returns nil; it may be called more than
// once.
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	return nil
}

// Done is closed once the Client has closed, by Close or by giving up.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the Client closed, once Done is closed: ErrClientClosed
// after Close, or an error wrapping ErrGaveUp and the last attempt's error
// (a *StatusError, say) when it gave up. It returns nil while the Client
// runs.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != Closed {
		return nil
	}
	return c.closeErr
}

// redact returns u without what may be a secret (credentials, the query)
// for an error message; "the server" if u does not parse.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "the server"
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}
