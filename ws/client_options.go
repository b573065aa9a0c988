package ws

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/peerwire/jsonrpc"
)

// ClientOptions configure NewClient. The zero value dials with the defaults
// and retries, from 100 ms to 10 s apart, until Close or a refusal that
// will not change (see GiveUp). Its first four fields are DialOptions'
// (each connection's Peer, WebSocket and upgrade request), the rest the
// Client's own.
//
//	ws.NewClient(url, ws.ClientOptions{Peer: jsonrpc.Options{Handler: mux}, OnConnect: login})
type ClientOptions struct {
	// Peer configures each connection's Peer: its Handler (for the
	// methods the server calls back), limits and Logger. Default: a Peer
	// that serves nothing.
	Peer jsonrpc.Options

	// Conn configures each WebSocket connection: message size,
	// keepalive, compression. Default: the defaults of Options.
	Conn Options

	// HTTPClient makes the upgrade requests. Default: http.DefaultClient.
	// In the browser, which makes them itself, it must be nil (else the
	// Client gives up at its first attempt).
	HTTPClient *http.Client

	// HTTPHeader is added to every upgrade request; Prepare may change it
	// for one attempt. Default: none. In the browser it must be empty, as
	// HTTPClient must be nil.
	HTTPHeader http.Header

	// Prepare, if set, runs before every attempt, the first included, and
	// may change the attempt's upgrade request (a.Header): send fresh
	// credentials, signing in again when a server restart has forgotten
	// the session, or refreshing a token that expired. It may refresh on
	// every attempt, or only when a.Err says that the last one was
	// refused with 401: the Client tries again once after a 401 when
	// Prepare is set (see GiveUp). An error fails the attempt like a
	// failed handshake: OnState reports it, MaxAttempts counts it, GiveUp
	// is asked about it, and calls waiting for a connection name it.
	// ctx ends after DialTimeout, which bounds Prepare, the handshake and
	// OnConnect together, or when the Client closes
	// (TestClientPrepareSignsInAgain).
	Prepare func(ctx context.Context, a *Attempt) error

	// OnConnect, if set, runs on every connection, the first and each
	// reconnection, before calls flow on it: authenticate, re-subscribe,
	// fetch what was missed; the Peer options' own OnConnect has run
	// before it. An error drops that connection and counts as a failed
	// attempt. ctx ends after DialTimeout (see there), or when
	// the Client closes.
	OnConnect func(ctx context.Context, p *jsonrpc.Peer) error

	// OnState, if set, is told of every change of state and of every
	// failed attempt (the state it stays in, Connecting or Reconnecting,
	// again, or Closed when the Client gives up, with that attempt's
	// error; TestClientOnStateEveryFailedAttempt), with the error that
	// caused it, or nil: the failed attempt (a *StatusError, an
	// error of Prepare or OnConnect), or the connection's end as
	// its transport saw it (nil for a clean close; the failed read or
	// write; the keepalive's finding, wrapping ErrKeepalive; or an error
	// saying that this side closed it, when its Peer ended for a reason
	// of its own). It runs on the Client's dialing goroutine: it must not
	// block.
	OnState func(s State, cause error)

	// MinBackoff and MaxBackoff bound the wait between attempts: it starts
	// at MinBackoff and doubles after each failed attempt up to
	// MaxBackoff, each wait drawn at random from its upper half (jitter,
	// so that clients dropped together do not come back together).
	// Defaults: 100 ms and 10 s.
	MinBackoff, MaxBackoff time.Duration

	// MaxAttempts bounds the failed attempts in a row (a failed
	// handshake, or a Prepare or OnConnect that failed): after exactly MaxAttempts of them the
	// Client closes with an error wrapping ErrGaveUp that counts them. A
	// connection made starts the count again, so after a drop the Client
	// makes MaxAttempts attempts more. Default: no bound.
	MaxAttempts int

	// GiveUp, if set, is asked after every failed attempt whether its
	// error will come back however often the Client tries again; if it
	// says so, the Client closes at once with an error wrapping ErrGaveUp
	// and err, which its calls then return, OnState reports (Closed) and
	// Err returns. A URL that is no WebSocket URL (ErrBadURL) is given up
	// on whatever GiveUp says. Default: give up on a handshake refused
	// with HTTP 403 (Forbidden) or 404 (Not Found), or answered with a
	// plain 2xx page, and on one refused with 401
	// (Unauthorized) unless Prepare is set and the attempt before it was
	// not refused with 401 too (Prepare has then had its chance to sign
	// in again): see StatusError (TestClientGivesUpOnWrongPath). To try
	// again whatever the error: func(error) bool { return false }.
	GiveUp func(err error) bool

	// DialTimeout bounds each attempt: Prepare, the handshake and
	// OnConnect together. Default: 10 s.
	DialTimeout time.Duration
}

// State is a Client's connection state.
type State int

const (
	Connecting   State = iota // dialing for the first time
	Connected                 // calls flow
	Reconnecting              // the connection ended; dialing again
	Closed                    // Close was called, or the Client gave up (see Err)
)

// String returns the state's name: "connecting", "connected",
// "reconnecting" or "closed".
func (s State) String() string {
	switch s {
	case Connecting:
		return "connecting"
	case Connected:
		return "connected"
	case Reconnecting:
		return "reconnecting"
	case Closed:
		return "closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Errors of a Client.
var (
	// ErrDropped is wrapped by the error of a Call that was in flight when
	// its connection dropped: the server may or may not have run it.
	ErrDropped = errors.New("ws: connection dropped while the call was in flight")
	// ErrClientClosed is returned by a Client's calls once it is closed.
	ErrClientClosed = errors.New("ws: client closed")
	// ErrGaveUp is wrapped by a Client's close error when MaxAttempts
	// consecutive attempts failed, or GiveUp found an attempt's error
	// permanent.
	ErrGaveUp = errors.New("ws: client gave up connecting")
)

// errBrowserHTTP is the error of a Client in the browser, which makes the
// upgrade request itself, configured to make it otherwise.
var errBrowserHTTP = errors.New("ws: a browser makes the upgrade request itself: it takes no HTTPClient, and sends no HTTPHeader, nor what Prepare put in Attempt.Header")

// An Attempt is one of a Client's attempts at a connection, as Prepare
// sees it before the handshake.
type Attempt struct {
	// Header is the attempt's upgrade request header: a copy of the
	// options' HTTPHeader, made for this attempt and never nil, that
	// Prepare may change. In the browser, which makes the request itself,
	// it must stay empty.
	Header http.Header

	// Failed counts the attempts that failed in a row just before this
	// one: 0 for the first attempt, and for the first after a connection
	// ended.
	Failed int

	// Err is why the attempt before this one failed (when Failed > 0),
	// or why the last connection ended (nil for a clean end, and on the
	// Client's first attempt). A 401 shows as a *StatusError with Code
	// 401.
	Err error
}

// failure returns why the attempt before a failed, or nil if none did.
func (a Attempt) failure() error {
	if a.Failed == 0 {
		return nil
	}
	return a.Err
}

// giveUp reports whether the Client gives up after an attempt failed with
// err, the attempt before it having failed with prev (nil if it did not).
func (o *ClientOptions) giveUp(err, prev error) bool {
	if errors.Is(err, errBrowserHTTP) || errors.Is(err, ErrBadURL) {
		return true // the same every time
	}
	if o.GiveUp != nil {
		return o.GiveUp(err)
	}
	switch code := statusOf(err); {
	case code == http.StatusForbidden, code == http.StatusNotFound, code >= 200 && code < 300:
		return true
	case code == http.StatusUnauthorized:
		return o.Prepare == nil || statusOf(prev) == http.StatusUnauthorized
	}
	return false
}

// statusOf returns the status of the StatusError in err's chain, or 0.
func statusOf(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

// withDefaults returns o with its defaults filled in.
func (o ClientOptions) withDefaults() ClientOptions {
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Second
	}
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	return o
}
