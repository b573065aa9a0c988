package httprpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
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
// when an event stream ended before its replies and could not be resumed
// (the retries failed, the server no longer kept its events, or it has no
// GET to resume with): a reply it would have carried will not come.
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

	// MaxRetries bounds the failed attempts in a row to resume one event
	// stream (one cut mid-event, a GET that fails), with a delay of
	// RetryDelay doubled after each (at most 5 s), or the server's retry
	// field when longer. A stream that ends cleanly between events is
	// polling, not a failure: it is resumed after the server's retry (or
	// RetryDelay, doubled while polls bring nothing), as often as the
	// server closes it. Default: DefaultMaxRetries; negative: no
	// resumption.
	MaxRetries int

	// RetryDelay is the delay before the first resumption attempt when
	// the server's stream gave no retry field. Default:
	// DefaultRetryDelay.
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
// of the writes (calls past MaxInFlight wait in order in a queue, which
// replies and notifications do not wait behind); the response (JSON, or
// an event stream carrying the server's requests and notifications for
// the call, then its reply, or one reply event per call of a batch) is
// read meanwhile by a goroutine of its own, so that a long call does not
// hold back the next message. (A server that answers a call with JSON,
// and sends the headers only with the reply, holds back the next message
// until then: SessionServer sends an event stream's headers at once.)
// Once the session has an id, a GET opens the standalone stream for what
// the server sends outside any call (a server that answers 405 has
// none). Event streams are read as the SSE standard says (line ends LF,
// CRLF or CR; a leading BOM; an event with empty data, such as MCP's
// priming event, not dispatched; the retry field honoured). A stream that
// ends before its replies, cut or closed for polling (SEP-1699), is
// resumed by a GET with Last-Event-ID (see MaxRetries). A call cancelled
// in the Peer's Cancel dialect abandons its stream. Closing the Peer sends
// DELETE (within 2 s) and ends every request.
//
// The connection ends with a cause wrapping ErrSessionExpired when the
// server says the session is gone (404), ErrStreamLost when a stream
// cannot be resumed (MaxRetries failures in a row, 410, or a resuming GET
// answered 405), or the transport's error; the Peer's pending calls fail
// with it.
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
