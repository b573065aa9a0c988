package ws

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/peerwire/jsonrpc"
)

// ClientOptions configure NewClient. The zero value dials with the defaults
// and retries forever, from 100 ms to 10 s apart.
type ClientOptions struct {
	// Dial configures each connection: the Peer (its Handler, for what the
	// server calls, and its limits), the WebSocket options and, outside
	// the browser, the upgrade request.
	Dial DialOptions

	// OnConnect, if set, runs on every connection, the first and each
	// reconnection, before calls flow on it: authenticate, re-subscribe,
	// fetch what was missed. An error drops that connection and counts as
	// a failed attempt. ctx ends when the Client closes.
	OnConnect func(ctx context.Context, p *jsonrpc.Peer) error

	// OnState, if set, is told of every change of state, with the error
	// that caused it, or nil: the failed dial, or the connection's end as
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

	// MaxAttempts bounds the failed attempts in a row (a failed dial, or
	// an OnConnect that failed): after exactly MaxAttempts of them the
	// Client closes with an error wrapping ErrGaveUp that counts them. A
	// connection made starts the count again, so after a drop the Client
	// makes MaxAttempts attempts more. Default: no bound.
	MaxAttempts int

	// GiveUp, if set, is asked after every failed attempt whether its
	// error will come back however often the Client tries again; if it
	// says so, the Client closes at once with an error wrapping ErrGaveUp
	// and err, which its calls then return, OnState reports (Closed) and
	// Err returns. Default: give up on a handshake refused with HTTP 401
	// (Unauthorized), 403 (Forbidden) or 404 (Not Found): see StatusError
	// (TestClientGivesUpOnWrongPath). To try again whatever the error:
	// func(error) bool { return false }.
	GiveUp func(err error) bool

	// DialTimeout bounds each attempt's handshake (and OnConnect).
	// Default: 10 s.
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

// giveUp reports whether the Client gives up after an attempt failed with
// err.
func (o *ClientOptions) giveUp(err error) bool {
	if o.GiveUp != nil {
		return o.GiveUp(err)
	}
	var se *StatusError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case 401, 403, 404:
		return true
	}
	return false
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
