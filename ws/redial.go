package ws

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/peerwire/jsonrpc"
)

// The Client's dialer: one goroutine per Client (run), which dials, holds
// the connection until it ends, and dials again after a backoff, until
// Close. What waits on what: run waits for Prepare, a dial and OnConnect
// (bounded together by DialTimeout), for the connection's end, or for a
// backoff timer, and each of these also ends when Close cancels its ctx;
// closing a Peer waits for its read loop (at most a close handshake, 1 s),
// never for its handlers. Callers wait for run to publish a connection
// (Client.ready), for their own ctx, or for the Client to close. run never
// waits for a caller, nor for a handler.

// run is the Client's goroutine: it dials, serves the connection until it
// ends, and dials again, until Close.
func (c *Client) run() {
	defer close(c.done)
	ctx := c.ctx     // ended by Close
	var prev Attempt // what the next attempt's Prepare is told
	first := true
	for {
		p, conn, err := c.connect(ctx, prev)
		if ctx.Err() != nil {
			if p != nil {
				p.Close()
			}
			c.finish(ErrClientClosed)
			return
		}
		if err != nil {
			c.setLast(fmt.Errorf("the last attempt failed: %w", err))
			failed := prev.Failed + 1
			switch {
			case c.opts.giveUp(err, prev.failure()):
				c.finish(fmt.Errorf("%w: %w", ErrGaveUp, err))
				return
			case c.opts.MaxAttempts > 0 && failed >= c.opts.MaxAttempts:
				c.finish(fmt.Errorf("%w after %d attempts: %w", ErrGaveUp, failed, err))
				return
			}
			prev = Attempt{Failed: failed, Err: err}
			c.setState(c.retryState(first), err)
			if !sleep(ctx, c.backoff(failed)) {
				c.finish(ErrClientClosed)
				return
			}
			continue
		}
		c.mu.Lock()
		if !first {
			c.reconnects++
		}
		c.peer, c.conn, c.last = p, conn, nil
		c.state = Connected // before any call can take p
		close(c.ready)
		c.mu.Unlock()
		if c.opts.OnState != nil {
			c.opts.OnState(Connected, nil)
		}
		first = false

		// The connection has ended once its Peer has (Done) or its Conn
		// has (a clean close from the server, after which the Peer may
		// drain its handlers for a while). Nothing sent on it could be
		// answered any more: end the old Peer at once, which cancels its
		// handlers' ctx but does not wait for them, and dial again.
		select {
		case <-p.Done():
		case <-conn.gone:
		case <-ctx.Done():
		}
		c.forget(p)
		p.Close()
		if ctx.Err() != nil {
			c.finish(ErrClientClosed)
			return
		}
		cause := conn.endCause()
		c.setLast(ended(cause))
		c.setState(Reconnecting, cause)
		// A drop is no failed attempt: MaxAttempts counts the attempts
		// that fail from here. The first redial still waits a backoff
		// (MinBackoff's), since the server may be restarting.
		prev = Attempt{Err: cause}
		if !sleep(ctx, c.backoff(1)) {
			c.finish(ErrClientClosed)
			return
		}
	}
}

func (c *Client) retryState(first bool) State {
	if first {
		return Connecting
	}
	return Reconnecting
}

// connect makes one attempt, prev telling what came before it: Prepare,
// the handshake and OnConnect, within DialTimeout.
func (c *Client) connect(ctx context.Context, prev Attempt) (*jsonrpc.Peer, *Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
	defer cancel()
	a := prev
	a.Header = c.opts.HTTPHeader.Clone()
	if a.Header == nil {
		a.Header = make(http.Header)
	}
	if c.opts.Prepare != nil {
		if err := c.opts.Prepare(dctx, &a); err != nil {
			return nil, nil, fmt.Errorf("ws: Prepare: %w", err)
		}
	}
	o, err := c.opts.dialOptions(a.Header)
	if err != nil {
		return nil, nil, err
	}
	p, conn, err := dial(dctx, c.url, o)
	if err != nil {
		return nil, nil, err
	}
	if c.opts.OnConnect != nil {
		if err := c.opts.OnConnect(dctx, p); err != nil {
			p.Close() // its handlers are not waited for: see Client
			return nil, nil, fmt.Errorf("ws: OnConnect: %w", err)
		}
	}
	return p, conn, nil
}

// backoff returns the wait before attempt n+1, after n failed ones.
func (c *Client) backoff(n int) time.Duration {
	d := c.opts.MinBackoff
	for i := 1; i < n && d < c.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.opts.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// setLast records why there is no connection, for the callers that wait.
func (c *Client) setLast(err error) {
	c.mu.Lock()
	c.last = err
	c.mu.Unlock()
}

// ended says that a connection ended, with cause if there is one.
func ended(cause error) error {
	if cause == nil {
		return errors.New("the connection ended cleanly")
	}
	return fmt.Errorf("the connection ended: %w", cause)
}

// setState records s and tells OnState.
func (c *Client) setState(s State, cause error) {
	c.mu.Lock()
	c.state = s
	c.mu.Unlock()
	if c.opts.OnState != nil {
		c.opts.OnState(s, cause)
	}
}

// finish closes the Client with err.
func (c *Client) finish(err error) {
	c.mu.Lock()
	c.closeErr = err
	c.peer, c.conn = nil, nil
	select {
	case <-c.ready:
	default:
		close(c.ready) // wakes the callers waiting for a connection
	}
	c.mu.Unlock()
	c.setState(Closed, err)
}

// sleep waits d, or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
