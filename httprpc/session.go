package httprpc

// Sessions: the Streamable HTTP transport of the Model Context Protocol
// (revisions 2025-03-26, 2025-06-18 and 2025-11-25), kept generic.
//
// A SessionServer serves one endpoint. A POST without a session id, holding
// a request of StartMethods (MCP's initialize), starts a session: a
// *jsonrpc.Peer of its own, symmetric as every Peer is, whose
// id the response's Mcp-Session-Id header carries; every later request of
// the session names it in the same header. A POST carries one message (or
// a batch). If it holds no request, the reply is 202 Accepted once the
// Peer has read it. Otherwise the reply is an event stream
// (text/event-stream, when the client accepts it) carrying, in order, what
// the session's handlers send while they serve those requests (calls back
// to the client, notifications, progress) and then the response, after
// which the stream ends; or, for a client that accepts only JSON, the
// response as application/json. A GET opens the session's standalone
// stream, which carries what the Peer sends outside any request (and what
// a handler sends after its POST's stream has ended). A DELETE ends the
// session.
//
// Every event has an id, unique within the session, that names its stream
// and its place in it ("<stream>-<seq>"). A client whose stream was cut
// sends a GET with Last-Event-ID: the events after that one on that
// stream are replayed, then the stream goes on live (for a POST's stream,
// up to its response). Nothing is lost or repeated while the events are
// within the session's buffer (MaxBufferedBytes); see SessionServer for
// what happens past it.
//
// The client side is Dial, which returns a *jsonrpc.Peer over such an
// endpoint.

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peerwire/jsonrpc"
)

// Defaults of SessionServer.
const (
	DefaultIdleTimeout          = 10 * time.Minute
	DefaultUnusedTimeout        = 30 * time.Second
	DefaultMaxSessions          = 10000
	DefaultMaxSessionsPerClient = 100
	DefaultMaxBufferedBytes     = 1 << 20
	DefaultMaxBodies            = 256
	DefaultStreamRetry          = time.Second
)

// DefaultStartMethods are the methods whose request starts a session by
// default: MCP's initialize.
var DefaultStartMethods = []string{"initialize"}

// DefaultProtocolVersions are the MCP revisions whose MCP-Protocol-Version
// header a SessionServer accepts by default.
var DefaultProtocolVersions = []string{"2025-03-26", "2025-06-18", "2025-11-25"}

// The headers of the transport.
const (
	SessionIDHeader       = "Mcp-Session-Id"
	ProtocolVersionHeader = "MCP-Protocol-Version"
	lastEventIDHeader     = "Last-Event-ID"
)

// ErrSlowClient is wrapped by the cause a session ends with when the
// events its client has not taken (it does not read its event streams, or
// opens none) would pass MaxBufferedBytes.
var ErrSlowClient = errors.New("httprpc: client does not read its event streams")

// ErrSessionIdle is the cause a session ends with when it has been idle
// for IdleTimeout.
var ErrSessionIdle = errors.New("httprpc: session idle")

// errShutdown is the cause of the sessions Shutdown ends.
var errShutdown = errors.New("httprpc: server shutting down")

// SessionServer is an http.Handler that serves the Streamable HTTP
// transport with sessions: each session is a *jsonrpc.Peer configured by
// Peer, which lives across the requests that name its id, until the
// client deletes it, it idles past IdleTimeout (UnusedTimeout for one
// whose client never came back after the request that started it), its
// client stops taking its events, or Shutdown. The zero value serves with
// the defaults; set the fields before the first request. All its methods
// may be called concurrently.
//
//	http.Handle("/mcp", &httprpc.SessionServer{Peer: jsonrpc.Options{Handler: mux}})
//
// A session starts with a POST without a session id whose requests are
// all of StartMethods (MCP's initialize by default); any other POST
// without one gets 400, as does any other request without one.
//
// Answers, besides the streams: 202 for a POST with no request, and for a
// POST taking only JSON whose calls the client cancelled (MCP's dialect
// answers none); 400 for a request without a session id once it is not a
// POST that starts one, for a malformed Last-Event-ID, and for an
// MCP-Protocol-Version not in ProtocolVersions (the body lists those); 403 for a Host or an Origin refused (see AllowedHosts
// and OriginPatterns) or an Identity error; 404 for a session id unknown,
// expired, deleted or of another identity (the client must start a new
// session); 405 for a method other than POST, GET, DELETE and a CORS
// preflight (OPTIONS); 406 for an Accept header that takes neither JSON
// nor an event stream; 410 for a Last-Event-ID whose following events are
// no longer buffered (the stream cannot be resumed); 413 for a body over
// MaxBodySize; 415 for a POST that is not application/json; 429, with a
// JSON-RPC error body, past MaxSessionsPerClient; 503, with a JSON-RPC
// error body, past MaxSessions, MaxBodies (with Retry-After: 1) or while
// shutting down. A refusal builds nothing: no session, Peer or timer.
//
// A second GET for a stream already being written (the standalone stream,
// or a resumption) replaces the first, whose response ends: a client that
// reconnects after a cut may do so before the server sees the cut. A
// stream that ends because its session ended (Shutdown, an expiry) ends
// with an event of type "session-ended" whose data says why: Dial then
// ends at once (ErrSessionExpired); other readers do not dispatch it.
//
// For MCP, set Peer.Cancel to jsonrpc.MCPCancel and Peer.Progress to
// jsonrpc.MCPProgress: without them a client's notifications/cancelled
// does not cancel its call's handler, and jsonrpc.ReportProgress sends
// nothing.
//
// Handlers: a call's handler sees, through its ctx, the values of the
// context of the HTTP request that carried the call (what middleware put
// there for that request: its authenticated user, say), over those of
// the session's base context (BaseContext); a notification's handler, and
// a call whose request it cannot tell (the same id posted twice at once),
// see the base context's only. A handler's ctx is cancelled when the
// session ends or the client cancels the call, not when the POST that
// carried it ends: the client may resume its stream.
//
// What the SessionServer bounds by itself: each body (MaxBodySize), the
// bodies being read at once (MaxBodies), the sessions (MaxSessions, and
// MaxSessionsPerClient per client), each session's buffered events and
// the streams it keeps (MaxBufferedBytes), and a session's inbound and outbound work through
// Peer's MaxQueuedBytes and MaxOutboundBytes, as for any Peer. What the
// http.Server must bound: the time a client may take to send its headers
// and body (ReadHeaderTimeout, ReadTimeout: a POST's body is read to the
// end, or to MaxBodySize, before anything else happens) and idle
// keep-alive connections (IdleTimeout); NewHTTPServer sets them. Leave its
// WriteTimeout at zero: an event stream lasts as long as the call it
// carries; the SessionServer gives each write of an event stream a
// deadline of its own (30 s), and writes a comment on a stream silent for
// 30 s, so that proxies keep it open and a client that vanished is found.
type SessionServer struct {
	// Peer configures each session's Peer: its Handler, limits and Logger.
	// Its OnConnect, if set, runs on each session's Peer before the
	// SessionServer's OnConnect (see there), and its BaseContext, if set,
	// lies under the context of the request that started the session (see
	// BaseContext below), as on every transport
	// (TestSessionServerHonoursPeerHooks). An interceptor of the
	// SessionServer's goes ahead of its Interceptors (it gives each call's
	// handler the values of its request's context).
	Peer jsonrpc.Options

	// BaseContext returns the context whose values a session's handlers
	// see beneath those of their own request's (see SessionServer), and
	// over those of Peer.BaseContext. Default: the context of the request
	// that started the session. Its cancellation is not inherited.
	BaseContext func(r *http.Request) context.Context

	// Identity, if set, binds each session to the identity it returns for
	// the request that starts the session (its authenticated user, say, as
	// middleware put it in the request's context), as the transport's
	// security guidance asks: a later request naming the session whose
	// identity differs gets 404, as for a session that does not exist, so
	// that a session id that leaked is of no use to another user. An error
	// refuses the request with 403. It also names the client that
	// MaxSessionsPerClient counts. Default: none (sessions are bound to
	// nothing but their unguessable id; clients are told apart by IP
	// address).
	Identity func(r *http.Request) (string, error)

	// OnConnect, if set, is called with each new session's Peer, and the
	// request that starts it, before the Peer reads that request, after
	// Peer.OnConnect. A session whose Peer.OnConnect closed its Peer is
	// refused: the request that would start it gets 403, and neither
	// OnConnect nor OnDisconnect is told of it
	// (TestSessionServerPeerOnConnectRefuses).
	OnConnect func(p *jsonrpc.Peer, r *http.Request)

	// OnDisconnect, if set, is called once a session has ended and its
	// handlers have returned, with its Peer and why it ended (as Peer.Wait
	// returns it: wrapping ErrSessionIdle or ErrSlowClient, say); nil for
	// a clean end (the client's DELETE, a Close).
	OnDisconnect func(p *jsonrpc.Peer, cause error)

	// AllowedHosts lists the names the endpoint answers to, as path.Match
	// patterns matched against the Host header without its port
	// ("mcp.example.com", "*.example.com"); a request naming another host
	// gets 403; "*" takes any name. By default a server answers to no
	// name it was not given: reached on loopback, to loopback names only
	// (localhost, 127.0.0.1, [::1]); reached at another address (listening
	// on all interfaces, say), to IP literals and localhost names. So a
	// page whose name an attacker rebinds to an address of this machine
	// cannot reach it (DNS rebinding: such a page's Host and Origin both
	// carry the attacker's name). A server reached by a name, or behind a
	// reverse proxy that passes the public Host on, lists it.
	AllowedHosts []string

	// OriginPatterns lists the hosts of other origins whose browser pages
	// may use the endpoint, as path.Match patterns ("*.example.com",
	// "localhost:*"; "https://*.example.com" matches scheme and host). The
	// endpoint answers those pages' CORS preflights and lets them read
	// its responses and the Mcp-Session-Id header. By default only pages
	// of the endpoint's own (allowed) host may use it, and a page of
	// another origin gets 403; requests without an Origin header (clients
	// that are not browsers) are always accepted. The transport's
	// specification requires the check.
	OriginPatterns []string

	// ProtocolVersions are the values of the MCP-Protocol-Version header
	// accepted; a request without the header is accepted too. Default:
	// DefaultProtocolVersions.
	ProtocolVersions []string

	// StartMethods are the methods whose request starts a session: a POST
	// without a session id must hold requests of these methods only, or
	// it gets 400. Default: DefaultStartMethods (MCP's initialize).
	StartMethods []string

	// IdleTimeout ends a session that has had no request for this long,
	// unless one of its handlers is still answering a request or one of
	// its event streams is open. Default: DefaultIdleTimeout; negative:
	// never.
	IdleTimeout time.Duration

	// UnusedTimeout ends, as IdleTimeout does (when shorter), a session
	// that is not used: whose client has made no call since the request
	// that started it (notifications, such as MCP's
	// notifications/initialized, and GETs do not count). A client that
	// starts sessions and abandons them holds each this long, not
	// IdleTimeout. Default: DefaultUnusedTimeout; negative: only
	// IdleTimeout applies.
	UnusedTimeout time.Duration

	// MaxSessions bounds the sessions alive at once; past it, a request
	// that would start one gets 503. Default: DefaultMaxSessions;
	// negative: no limit.
	MaxSessions int

	// MaxSessionsPerClient bounds the sessions alive at once of one
	// client, told apart by Identity when set, else by IP address, so
	// that one client cannot take all of MaxSessions. A request that
	// would pass it ends that client's oldest session that is not used
	// (see UnusedTimeout) and has nothing going on (no request being
	// served, no stream open), to make room; if every session of the
	// client is in use, it gets 429. Without Identity every client on
	// one address is one client (on loopback, every local process): set
	// Identity to tell them apart. Default: DefaultMaxSessionsPerClient;
	// negative: no limit.
	MaxSessionsPerClient int

	// MaxBufferedBytes bounds, per session, what its events and the
	// streams kept for resumption hold, each counted at what it holds (an
	// event at its data's length plus 64 bytes, a stream kept at 256
	// bytes): the events no client has taken yet, and those sent but kept
	// for a resumption, which are at most a quarter of it (256 KiB by
	// default). The streams kept are those whose reply is in, sent whole
	// or not (its client may have left before it came), the last 64 of
	// the session. What the server sends outside any call while no GET
	// has opened the standalone stream (the transport makes it optional)
	// is kept for such a GET within a quarter of it, the oldest dropped,
	// and never ends the session. When room is needed, go first, oldest
	// first: sent events, then streams kept that no client is reading,
	// then the events of an unopened standalone stream (a stream cannot
	// then be resumed from before them: 410). When what is left would
	// still pass it, a handler that sends waits (its Peer's writes wait)
	// while a client reads a stream holding events not taken yet, as over
	// a WebSocket; with no stream being read, or one whose client takes
	// nothing for 30 s, the session ends with a cause wrapping
	// ErrSlowClient. So the events of all sessions hold at most
	// MaxSessions times MaxBufferedBytes. Default:
	// DefaultMaxBufferedBytes; negative: no limit.
	MaxBufferedBytes int

	// MaxBodySize bounds a POST's body; a larger one gets 413 and is not
	// read further. Default: DefaultMaxBodySize; negative: no limit.
	MaxBodySize int64

	// MaxBodies bounds the POST bodies being read at once, across the
	// SessionServer; one more gets 503 with Retry-After: 1 at once. With
	// MaxBodySize it bounds the memory that bodies being received hold
	// (256 × 4 MiB = 1 GiB at the defaults; a stalled upload holds its
	// share until the http.Server's ReadTimeout). Default:
	// DefaultMaxBodies; negative: no limit.
	MaxBodies int

	// StreamRetry is the reconnection delay every event stream asks of its
	// client, in the retry field of its first event: how long a client
	// waits before it resumes a stream that ended or was cut. Default:
	// DefaultStreamRetry; negative: none is sent.
	StreamRetry time.Duration

	// MaxStreamDuration, if positive, ends an event stream that has been
	// open this long (at the next moment it has nothing to write), before
	// its reply if need be: its client comes back after StreamRetry with
	// Last-Event-ID and gets the rest (SEP-1699's polling, for proxies
	// and hosts that cut long responses). Default: 0, a stream lasts as
	// long as its call (the standalone one, as long as its client keeps
	// it).
	MaxStreamDuration time.Duration

	shutting atomic.Bool // Shutdown was called (what a stream ended by it says)

	mu       sync.Mutex
	sessions map[string]*session
	clients  map[string][]*session // sessions alive per client, oldest first (MaxSessionsPerClient)
	closing  bool
	bodies   chan struct{}  // the MaxBodies semaphore, nil for no limit
	once     sync.Once      // makes bodies
	wg       sync.WaitGroup // a goroutine per session, until its Peer has ended
}

var _ http.Handler = (*SessionServer)(nil)
