package httprpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// Defaults of DialOptions.
const (
	DefaultMaxInFlight    = 16
	DefaultMaxMessageSize = 32 << 20
	DefaultMaxRetries     = 5
	DefaultRetryDelay     = 100 * time.Millisecond
)

// ErrSessionExpired is wrapped by the cause a dialled connection ends with
// when the server no longer knows its session (HTTP 404): the Peer's calls
// fail with it, and the client must dial again for a new session.
var ErrSessionExpired = errors.New("httprpc: session expired or deleted by the server")

// ErrStreamLost is wrapped by the cause a dialled connection ends with
// when an event stream was cut and could not be resumed within the
// retries (the server no longer kept its events, or did not answer): a
// reply it would have carried will not come.
var ErrStreamLost = errors.New("httprpc: event stream cut and not resumed")

// DialOptions configure Dial. The zero value gives the defaults each field
// documents; zero means the default and a negative value turns a limit
// off.
type DialOptions struct {
	// HTTPClient sends the requests. Default: http.DefaultClient. Its
	// Timeout, if any, bounds every request, event streams included: leave
	// it zero for calls that stream for long.
	HTTPClient *http.Client

	// HTTPHeader is added to every request (an Authorization header, say).
	HTTPHeader http.Header

	// Peer configures the Peer Dial returns.
	Peer jsonrpc.Options

	// ProtocolVersion, if set, is sent as the MCP-Protocol-Version header
	// of every request. Default: none.
	ProtocolVersion string

	// MaxInFlight bounds the calls whose POST is being answered at once (a
	// call's event stream lasts as long as the call). A call past it waits
	// in order, in a queue of its own, for one of them to end: Write does
	// not wait for it, so replies to the server and notifications, which
	// take no slot, never wait behind our calls. A call cancelled in the
	// Peer's Cancel dialect gives its slot back at once (its stream is
	// abandoned), or leaves the queue unsent. The queue holds at most the
	// Peer's MaxOutboundBytes (4 MiB by default) of calls; past that the
	// connection ends with a cause saying so. Default: DefaultMaxInFlight.
	MaxInFlight int

	// MaxMessageSize bounds a message read (a JSON body, an event's
	// data); a larger one ends the connection. Default:
	// DefaultMaxMessageSize.
	MaxMessageSize int

	// MaxRetries bounds the attempts to resume one cut event stream, with
	// a delay of RetryDelay doubled after each (at most 5 s). Default:
	// DefaultMaxRetries; negative: no resumption.
	MaxRetries int

	// RetryDelay is the delay before the first resumption attempt.
	// Default: DefaultRetryDelay.
	RetryDelay time.Duration
}

// Dial returns a Peer that talks to the Streamable HTTP endpoint url, as
// served by SessionServer (or any MCP server of that transport). It makes
// no request itself: the session starts with the first message the Peer
// sends (for MCP, initialize), and its id, from the response, goes on
// every later request. ctx bounds Dial only, which does not wait for
// anything; the Peer lives until it is closed or the session ends.
//
// Each message the Peer writes is a POST. Write returns once the response
// headers are in, so that the server receives the messages in the order
// of the writes; the response (JSON, or an event stream carrying the
// server's requests and notifications for the call, then its reply) is
// read meanwhile by a goroutine of its own, so that a long call does not
// hold back the next message (see MaxInFlight). (A server that answers a
// call with JSON, and sends the headers only with the reply, holds back
// the next message until then: SessionServer sends an event stream's
// headers at once.) Once the session has an
// id, a GET opens the standalone stream for what the server sends outside
// any call (a server that answers 405 has none). A stream cut before its
// end is resumed by a GET with Last-Event-ID. Closing the Peer sends
// DELETE (within 2 s) and ends every request.
//
// The connection ends with a cause wrapping ErrSessionExpired when the
// server says the session is gone (404), ErrStreamLost when a stream
// cannot be resumed, or the transport's error; the Peer's pending calls
// fail with it.
func Dial(ctx context.Context, rawURL string, opts ...DialOptions) (*jsonrpc.Peer, error) {
	if len(opts) > 1 {
		panic("httprpc: more than one DialOptions")
	}
	var o DialOptions
	if len(opts) == 1 {
		o = opts[0]
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("httprpc: failed to dial %q: want an http or https URL", rawURL)
	}
	c := newClientConn(u.String(), o)
	return jsonrpc.NewPeer(c, o.Peer), nil
}

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
