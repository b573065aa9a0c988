package httprpc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// clientConn is the jsonrpc.Conn of a dialled session.
type clientConn struct {
	url    string
	hc     *http.Client
	header http.Header
	opts   DialOptions

	ctx    context.Context // every request's; cancelled by Close
	cancel context.CancelFunc
	in     chan []byte // messages read, for Read
	wg     sync.WaitGroup

	mu        sync.Mutex
	sessionID string
	inFlight  int                    // calls whose POST is being answered (MaxInFlight)
	queue     []*queuedCall          // calls waiting for a slot, in order
	queued    int                    // bytes of queue
	maxQueued int                    // bound on queued
	awaiting  map[string]*postStream // by request id: the POST stream that will carry its reply
	getOpen   bool                   // the standalone stream has been asked for
	closed    chan struct{}
	cause     error
	closeOnce sync.Once
}

func newClientConn(u string, o DialOptions) *clientConn {
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.MaxInFlight = limitOr(o.MaxInFlight, DefaultMaxInFlight)
	if o.MaxInFlight < 0 {
		o.MaxInFlight = 1 << 16
	}
	o.MaxMessageSize = limitOr(o.MaxMessageSize, DefaultMaxMessageSize)
	if o.MaxMessageSize < 0 {
		o.MaxMessageSize = 1 << 40
	}
	o.MaxRetries = limitOr(o.MaxRetries, DefaultMaxRetries)
	o.RetryDelay = limitOr(o.RetryDelay, DefaultRetryDelay)
	return &clientConn{
		url: u, hc: hc, header: o.HTTPHeader, opts: o,
		ctx: ctx, cancel: cancel,
		in:        make(chan []byte),
		closed:    make(chan struct{}),
		awaiting:  make(map[string]*postStream),
		maxQueued: limitOr(o.Peer.MaxOutboundBytes, 4<<20),
	}
}

var _ jsonrpc.Conn = (*clientConn)(nil)

// Read returns the next message of any response or stream, or the
// connection's cause once it has ended.
func (c *clientConn) Read() ([]byte, error) {
	select {
	case msg := <-c.in:
		return msg, nil
	case <-c.closed:
		return nil, c.cause
	}
}

// deliver hands msg, from the response of ps (nil for the standalone
// stream), to Read; false once the connection has ended or ps was
// abandoned.
func (c *clientConn) deliver(msg []byte, ps *postStream) bool {
	var abandoned <-chan struct{}
	if ps != nil {
		abandoned = ps.ctx.Done()
	}
	select {
	case c.in <- msg:
		return true
	case <-c.closed:
		return false
	case <-abandoned:
		return false
	}
}

// fail ends the connection with cause (the first one stays).
func (c *clientConn) fail(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause == nil {
		c.cause = cause
		close(c.closed)
		c.cancel()
	}
}

// goOwned runs f on a goroutine Close waits for, unless the connection
// has ended (then it reports false). The count is taken under mu, which
// fail holds to end the connection, so none is added once Close waits.
func (c *clientConn) goOwned(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause != nil {
		return false
	}
	c.wg.Go(f)
	return true
}

// request makes a request to the endpoint with the session's headers.
func (c *clientConn) request(ctx context.Context, method string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url, body)
	if err != nil {
		return nil, fmt.Errorf("httprpc: failed to make a request: %w", err)
	}
	for k, vs := range c.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	c.mu.Lock()
	if c.sessionID != "" {
		req.Header.Set(SessionIDHeader, c.sessionID)
	}
	c.mu.Unlock()
	if c.opts.ProtocolVersion != "" {
		req.Header.Set(ProtocolVersionHeader, c.opts.ProtocolVersion)
	}
	return req, nil
}

// transportError ends the connection with a request's failure, and
// returns the cause.
func (c *clientConn) transportError(what string, err error) error {
	select {
	case <-c.closed:
		return c.cause // closed meanwhile: that is why
	default:
	}
	err = fmt.Errorf("httprpc: failed to %s: %w", what, err)
	c.fail(err)
	return err
}

// checkStatus returns nil for a 2xx response; else it closes the body and
// ends the connection with a cause (ErrSessionExpired for 404 once the
// session has an id), which it returns.
func (c *clientConn) checkStatus(resp *http.Response, what string) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	c.mu.Lock()
	hasSession := c.sessionID != ""
	c.mu.Unlock()
	var err error
	if resp.StatusCode == http.StatusNotFound && hasSession {
		err = fmt.Errorf("%w (%s: %s)", ErrSessionExpired, what, resp.Status)
	} else {
		err = fmt.Errorf("httprpc: %s: %s: %s", what, resp.Status, bytes.TrimSpace(snippet))
	}
	c.fail(err)
	return err
}

// learnSession keeps the session id a response carries, and opens the
// standalone stream once there is one.
func (c *clientConn) learnSession(resp *http.Response) {
	id := resp.Header.Get(SessionIDHeader)
	c.mu.Lock()
	if id != "" && c.sessionID == "" {
		c.sessionID = id
	}
	open := c.sessionID != "" && !c.getOpen
	c.getOpen = c.getOpen || open
	c.mu.Unlock()
	if open {
		c.goOwned(c.standalone)
	}
}

// Close ends every request, tells the server to end the session (DELETE,
// within 2 s), and waits for the goroutines reading responses.
func (c *clientConn) Close() error {
	c.closeOnce.Do(func() {
		c.fail(jsonrpc.ErrClosed)
		c.mu.Lock()
		id := c.sessionID
		c.mu.Unlock()
		if id != "" {
			c.deleteSession(id)
		}
		c.wg.Wait()
	})
	return nil
}

// deleteSession sends DELETE for session id, within 2 s.
func (c *clientConn) deleteSession(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	for k, vs := range c.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set(SessionIDHeader, id)
	if c.opts.ProtocolVersion != "" {
		req.Header.Set(ProtocolVersionHeader, c.opts.ProtocolVersion)
	}
	if resp, err := c.hc.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}
