package httprpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/peerwire/jsonrpc"
)

// callConn is the one-shot jsonrpc.Conn of a Client's call: its first
// Write posts the message and reads the response, which its Read returns
// once; then Read returns io.EOF. Later writes (none in practice) are
// dropped: there is no request for them to go in.
type callConn struct {
	c      *Client
	ctx    context.Context
	cancel context.CancelFunc // aborts the POST; called by Close

	posted bool          // by Write, which the Peer serialises
	in     chan struct{} // closed once the response is in, or the POST failed
	reply  []byte        // the response body; nil for none
	err    error         // why the POST failed; nil if it did not
	empty  bool          // a 2xx response with no body

	readOnce bool // Read returned the reply; Read is called by one goroutine
	closed   chan struct{}
	close    sync.Once
}

func newCallConn(ctx context.Context, c *Client) *callConn {
	cc := &callConn{c: c, in: make(chan struct{}), closed: make(chan struct{})}
	cc.ctx, cc.cancel = context.WithCancel(ctx)
	return cc
}

// errTooLarge is what Read returns to the Peer for a reply over the cap:
// not ErrMessageTooLarge, which a Peer answers and reads on; the caller
// gets cc.err, which wraps it.
var errTooLarge = errors.New("httprpc: reply too large")

func (cc *callConn) Read() ([]byte, error) {
	if cc.readOnce {
		return nil, io.EOF
	}
	select {
	case <-cc.in:
	case <-cc.closed:
		return nil, io.EOF
	}
	cc.readOnce = true
	switch {
	case errors.Is(cc.err, jsonrpc.ErrMessageTooLarge):
		return nil, errTooLarge
	case cc.reply == nil:
		return nil, io.EOF
	}
	return cc.reply, nil
}

func (cc *callConn) Write(msg []byte) error {
	if cc.posted {
		return nil
	}
	cc.posted = true
	cc.reply, cc.empty, cc.err = cc.post(msg)
	close(cc.in)
	return nil
}

func (cc *callConn) Close() error {
	cc.close.Do(func() {
		cc.cancel()
		close(cc.closed)
	})
	return nil
}

// MaxMessageSize makes callConn a jsonrpc.Limiter: the Peer refuses to
// write a request longer than the Client's cap.
func (cc *callConn) MaxMessageSize() int {
	if cc.c.max < 0 {
		return 0
	}
	return int(cc.c.max)
}

// failure is why the POST failed, or nil; valid once the Peer has ended.
func (cc *callConn) failure() error {
	select {
	case <-cc.in:
		return cc.err
	default:
		return nil // never posted
	}
}

// noReply reports whether the response was a 2xx with no body.
func (cc *callConn) noReply() bool {
	select {
	case <-cc.in:
		return cc.empty
	default:
		return false
	}
}

// post sends msg and reads the response in full (so that the connection
// goes back to the pool), returning its body, nil for an empty one.
func (cc *callConn) post(msg []byte) (reply []byte, empty bool, err error) {
	// A copy: the transport may read a request body after Do returns, and
	// msg is the Peer's.
	req, err := http.NewRequestWithContext(cc.ctx, http.MethodPost, cc.c.url, bytes.NewReader(bytes.Clone(msg)))
	if err != nil {
		return nil, false, fmt.Errorf("httprpc: failed to make a request: %w", err)
	}
	h := req.Header
	for k, v := range cc.c.header {
		h[k] = v
	}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	resp, err := cc.c.hc.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("httprpc: failed to post: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		drain(resp.Body)
		return nil, false, fmt.Errorf("httprpc: failed to post: %w", &StatusError{Code: resp.StatusCode, Body: head, Method: http.MethodPost})
	}
	body, err := readReply(resp, cc.c.max)
	if err != nil {
		return nil, false, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, true, nil
	}
	return body, false, nil
}

// readReply reads a response body of at most max bytes (max < 0: no limit).
func readReply(resp *http.Response, max int64) ([]byte, error) {
	var rd io.Reader = resp.Body
	if max >= 0 {
		if resp.ContentLength > max {
			return nil, fmt.Errorf("httprpc: reply of %d bytes over the limit of %d: %w", resp.ContentLength, max, jsonrpc.ErrMessageTooLarge)
		}
		rd = io.LimitReader(resp.Body, max+1)
	}
	body, err := readAll(rd, resp.ContentLength)
	if err != nil {
		return nil, fmt.Errorf("httprpc: failed to read the reply: %w", err)
	}
	if max >= 0 && int64(len(body)) > max {
		return nil, fmt.Errorf("httprpc: reply over the limit of %d bytes: %w", max, jsonrpc.ErrMessageTooLarge)
	}
	return body, nil
}

// drain reads what is left of a body, up to 64 KiB, so that its connection
// can be reused; a longer one is left for Close to drop with the
// connection.
func drain(r io.Reader) { _, _ = io.CopyN(io.Discard, r, 64<<10) }
