package httprpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
	log    *slog.Logger

	// dialect is the Peer's cancel dialect, whose notification for a call
	// abandons its stream; own says it is Dial's, which never leaves the
	// client (see abandonDialect).
	dialect *jsonrpc.CancelDialect
	own     bool

	ctx    context.Context // every request's; cancelled by Close
	cancel context.CancelFunc
	in     chan []byte // messages read, for Read
	wg     sync.WaitGroup

	mu        sync.Mutex
	sessionID string
	version   string                 // MCP-Protocol-Version: ProtocolVersion, then the one initialize agreed on
	initID    string                 // the id of the initialize call whose reply is awaited, or ""
	inFlight  int                    // calls whose POST is being answered (MaxInFlight)
	queue     []*queuedCall          // calls waiting for a slot, in order
	queued    int                    // bytes of queue
	awaiting  map[string]*postStream // by request id: the POST stream that will carry its reply
	drains    int                    // responses to POSTs of no call being read (maxDrains)
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
	log := o.Peer.Logger
	if log == nil {
		log = silent
	}
	c := &clientConn{
		url: u, hc: hc, header: o.HTTPHeader, opts: o, log: log,
		dialect: o.Peer.Cancel,
		ctx:     ctx, cancel: cancel,
		in:       make(chan []byte),
		closed:   make(chan struct{}),
		awaiting: make(map[string]*postStream),
		version:  o.ProtocolVersion,
	}
	if c.dialect == nil {
		c.dialect, c.own = abandonDialect, true
	}
	return c
}

var (
	_ jsonrpc.Conn   = (*clientConn)(nil)
	_ jsonrpc.Router = (*clientConn)(nil)
)

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
	if c.version != "" {
		req.Header.Set(ProtocolVersionHeader, c.version)
	}
	c.mu.Unlock()
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

// refusal returns the error of resp, a status other than 2xx to a
// request (method, carrying what), and closes its body: a *StatusError,
// wrapped by ErrSessionExpired for 404 once the session has an id.
func (c *clientConn) refusal(resp *http.Response, method, what string) error {
	se := statusError(resp, method)
	c.mu.Lock()
	hasSession := c.sessionID != ""
	c.mu.Unlock()
	if resp.StatusCode == http.StatusNotFound && hasSession {
		return fmt.Errorf("%w: the %s of %s was answered %w", ErrSessionExpired, method, what, se)
	}
	return fmt.Errorf("httprpc: the %s of %s was refused: %w", method, what, se)
}

// statusError reads the start of resp's body into a *StatusError, and
// closes it.
func statusError(resp *http.Response, method string) *StatusError {
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	resp.Body.Close()
	return &StatusError{Code: resp.StatusCode, Body: snippet, Method: method}
}

// learnSession keeps the session id a response carries, and opens the
// standalone stream once there is one (see openStandalone).
func (c *clientConn) learnSession(resp *http.Response) {
	id := resp.Header.Get(SessionIDHeader)
	c.mu.Lock()
	if id != "" && c.sessionID == "" {
		c.sessionID = id
	}
	c.mu.Unlock()
	c.openStandalone()
}

// openStandalone opens the standalone stream once the session has an id,
// and no reply to initialize is awaited (the GET carries the protocol
// version it agrees on).
func (c *clientConn) openStandalone() {
	c.mu.Lock()
	open := c.sessionID != "" && !c.getOpen && c.initID == ""
	c.getOpen = c.getOpen || open
	c.mu.Unlock()
	if open {
		c.goOwned(c.standalone)
	}
}

// learnVersion takes, from data (a message that answers ids), the protocol
// version that the reply to initialize agreed on: later requests carry it
// in MCP-Protocol-Version, as the transport asks.
func (c *clientConn) learnVersion(data []byte, ids []string) {
	c.mu.Lock()
	init := c.initID
	c.mu.Unlock()
	if init == "" || !containsID(ids, init) {
		return
	}
	var reply struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	_ = json.Unmarshal(data, &reply)
	c.mu.Lock()
	if c.initID == init {
		c.initID = ""
		if v := reply.Result.ProtocolVersion; v != "" && len(v) <= 64 && isToken(v) {
			c.version = v
		}
	}
	c.mu.Unlock()
	c.openStandalone()
}

// containsID reports whether ids holds id.
func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// isToken reports whether v may go in a header as it is: visible ASCII.
func isToken(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] >= 0x7f {
			return false
		}
	}
	return true
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
	req, err := c.request(ctx, http.MethodDelete, nil)
	if err != nil {
		return
	}
	req.Header.Set(SessionIDHeader, id)
	if resp, err := c.hc.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}

// sessionOf returns the session id of c.
func (c *clientConn) session() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}
