package httprpc

import (
	"context"
	"errors"
	"fmt"
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
// when the server no longer knows its session (HTTP 404), or says it ended
// it (a SessionServer's Shutdown ends each open stream with an event that
// says so): the Peer's calls fail with it, and the client must dial again
// for a new session.
var ErrSessionExpired = errors.New("httprpc: session expired or deleted by the server")

// ErrStreamLost is wrapped by the cause a dialled connection ends with
// when an event stream ended before its replies and could not be resumed
// (MaxRetries failures in a row, the last of which it wraps, a
// *StatusError for a GET refused with 429 or 5xx; the server no longer
// kept its events, 410; or it has no GET to resume with, 405): a reply it
// would have carried will not come.
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

	// Peer configures the Peer Dial returns. For MCP, set Cancel to
	// jsonrpc.MCPCancel and Progress to jsonrpc.MCPProgress: without them
	// a call given up by its ctx is not cancelled on the server, and
	// progress (jsonrpc.WithProgress) is not asked for. With Cancel nil,
	// Dial gives the Peer a cancel dialect of its own, whose notification
	// never leaves the client: it tells the connection that a call was
	// given up (its slot is given back, or it leaves the queue), and no
	// notification the server sends matches it.
	Peer jsonrpc.Options

	// ProtocolVersion, if set, is sent as the MCP-Protocol-Version header
	// of every request until the reply to an initialize call names the
	// version agreed on (its result's protocolVersion), which every later
	// request carries instead, as MCP asks. Default: none (and then the
	// version initialize agreed on, if any).
	ProtocolVersion string

	// MaxInFlight bounds the calls whose POST is being answered at once (a
	// call's event stream lasts as long as the call). A call past it waits
	// in order, in a queue of its own, for one of them to end, for as long
	// as its caller waits, as a call waits for room in the Peer's outbound
	// queue: a caller that gives up takes it out unsent (whatever the
	// Cancel dialect), so the queue holds the messages of callers that
	// wait, at most the Peer's MaxPending. Write does not wait for it, so
	// replies to the server and notifications, which take no slot, never
	// wait behind our calls; nor does a call that a handler of ours makes
	// while it serves the server's request (with its ctx), which takes no
	// slot either: the server's call may be waiting for it. A call given
	// up by its ctx gives its slot back at once (its stream is abandoned).
	// Default: DefaultMaxInFlight.
	MaxInFlight int

	// MaxMessageSize bounds a message read (a JSON body, an event's
	// data); a larger one ends the connection. Default:
	// DefaultMaxMessageSize.
	MaxMessageSize int

	// MaxRetries bounds the failed attempts in a row to resume one event
	// stream (one cut mid-event, a GET that fails, or that the server
	// refuses with 429 or 5xx), with a delay of RetryDelay doubled after
	// each (at most 5 s), or the server's retry field or Retry-After when
	// longer. A stream that ends cleanly between events is polling, not a
	// failure: it is resumed after the server's retry (or RetryDelay), as
	// often as the server closes it; one that ended at once with nothing
	// on it, after at least 100 ms, doubled for each more in a row (at most
	// 5 s, or the server's retry). It also bounds the attempts of a reply
	// or a notification whose POST the server refuses with 429 or 503.
	// Default: DefaultMaxRetries; negative: no resumption.
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
// every later request (SessionID returns it). ctx bounds Dial only, which
// does not wait for anything; the Peer lives until it is closed or the
// session ends.
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
// until then: SessionServer sends an event stream's headers at once.) The
// response to a POST of replies or notifications must come within 30 s,
// or the connection ends; what its body holds is read within that time,
// by a few goroutines at most. Once the session has an id, a GET opens the
// standalone stream for what the server sends outside any call (a server
// that answers 405 has none). Event streams are read as the SSE standard
// says (line ends LF, CRLF or CR; a leading BOM; an event with empty data,
// such as MCP's priming event, not dispatched; an id over 1 KiB ignored;
// the retry field honoured). A stream that ends before its replies, cut or
// closed for polling (SEP-1699), is resumed by a GET with Last-Event-ID
// (see MaxRetries). A call given up by its ctx abandons its stream.
// Closing the Peer sends DELETE (within 2 s) and ends every request.
//
// The server's refusals: 429 and 503 are transient: a call is sent again
// after the server's Retry-After (at most 30 s; RetryDelay doubled
// without it) for as long as its caller waits, keeping its slot meanwhile,
// and a reply or notification in its place, MaxRetries times at most. Any
// other status than 2xx ends the connection, with a cause that names the
// request (the POST of initialize, the GET of a stream) and wraps a
// *StatusError (errors.As), wrapped in turn by ErrSessionExpired for a
// 404 once the session has an id: a wrong URL or a missing token (404,
// 401 to initialize) will not change by trying again. The Peer's calls
// then fail with an error wrapping both jsonrpc.ErrClosed and that cause.
//
// The connection ends with a cause wrapping ErrSessionExpired when the
// server says the session is gone (404, or the event that SessionServer's
// Shutdown sends), ErrStreamLost when a stream cannot be resumed, a
// *StatusError when a request is refused, or the transport's error; the
// Peer's pending calls fail with it.
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
	o.Peer.Cancel = c.dialect
	p := jsonrpc.NewPeer(c, o.Peer)
	dialled.Store(p, c)
	p.AfterFunc(func() { dialled.Delete(p) })
	return p, nil
}

// dialled maps each Peer Dial returned, until it ends, to its connection.
var dialled sync.Map

// SessionID returns the id of the session of p, a Peer that Dial returned
// (for logs): "" before the server has given one, after p has ended, or
// for a Peer Dial did not return.
func SessionID(p *jsonrpc.Peer) string {
	if c, ok := dialled.Load(p); ok {
		return c.(*clientConn).session()
	}
	return ""
}
