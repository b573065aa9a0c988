package ws

import (
	"math"
	"time"

	"github.com/peerwire/jsonrpc/internal/msgsize"
)

// Defaults of Options.
const (
	DefaultMaxMessageSize = msgsize.Default // 32 MiB, the stdio transport's cap too
	DefaultPingInterval   = 30 * time.Second
	DefaultPingTimeout    = 15 * time.Second
)

// Options configure a WebSocket connection: the Conn field of Server,
// DialOptions and ClientOptions, and NewConn's (at most one) argument. The
// zero value (or none) gives the defaults each field documents. As in jsonrpc.Options, zero means the default and a
// negative value turns a limit off (a negative PingInterval turns keepalive
// off).
type Options struct {
	// MaxMessageSize caps an incoming message, as in the stdio transport.
	// A larger message closes the connection with status 1009 (message too
	// big): a WebSocket message cannot be skipped. No more than the cap is
	// read into memory, whatever a frame header claims (a refusal
	// allocates about twice the cap). Default: DefaultMaxMessageSize; a
	// negative value means no cap.
	MaxMessageSize int64

	// PingInterval is how often a ping checks that the other side is still
	// there; a negative value turns keepalive off (and with it what Gone
	// tells of a Conn nobody reads). Default: DefaultPingInterval.
	//
	// Whatever arrives from the other side shows that it is there: its
	// messages, and also its pings and pongs. What the keepalive finds,
	// and how soon; each ends the connection with a cause wrapping
	// ErrKeepalive:
	//
	//   - While the Conn is being read: a remote side that sends nothing
	//     and stops answering (gone, or the connection half-open), within
	//     PingInterval+PingTimeout of the last thing it sent (45 s by
	//     default; TestKeepaliveFindsSilentServer).
	//     A remote side that pushes back (reads nothing, so answers no
	//     ping) is kept however long it does so, as long as it pings: a
	//     Peer of this package pings every min(PingInterval, 1 s) while it
	//     pushes back (TestKeepaliveKeepsServerThatPushesBack,
	//     TestKeepaliveKeepsClientThatPushesBack), even while this side
	//     cannot write to it (TestWritingToServerThatPushesBack; what
	//     bounds that is jsonrpc.Options.WriteTimeout). Its pings arrive
	//     about a second apart, so a PingTimeout under that may still take
	//     it for gone; so is a remote side that pushes back without pinging
	//     (another implementation, or keepalive turned off) once the bound
	//     above has passed.
	//   - While it is not (its Peer pushes back on a remote side that sends
	//     notifications faster than its handlers take them), a missing pong
	//     proves nothing, since it may sit unread, and never ends the
	//     connection: a remote side that is alive and reading is not
	//     dropped for it, however long the Peer pushes back. The keepalive
	//     pings every min(PingInterval, 1 s) instead, and finds a remote
	//     side that closes or resets the connection within about 2 s (the
	//     first ping after a close draws a reset, which fails the next). It
	//     then closes Gone, and Read fails at once. A remote side that
	//     vanishes without a word (its host gone, the connection half-open)
	//     is found only when the Peer reads again (then within
	//     PingInterval+PingTimeout), or when the operating system gives up
	//     retransmitting the pings (on Linux, about 15 minutes by default).
	//   - Either way: a ping that cannot be written within PingTimeout, or
	//     5 s if that is less (coder/websocket's bound on writing a control
	//     frame): the remote side takes no data, or far too slowly for what
	//     is being written to it. While the Conn is being read and the
	//     remote side's messages or pings arrive, that proves nothing: it
	//     is there, and pushes back.
	//
	// A ping from the remote side is answered, unless a write of this
	// side's is stuck (still in progress 50 ms after the ping came): the
	// pong would wait for that write, and coder/websocket would end the
	// connection after 5 s of it.
	//
	// A Conn made by NewConn does not hear the remote side's pings and
	// pongs (coder/websocket takes the callbacks that report them when it
	// dials or accepts): it takes a remote side that pushes back for gone
	// after PingInterval+PingTimeout, and answers pings whatever its
	// writes do. Dial, Accept and Server make Conns that hear them.
	PingInterval time.Duration

	// PingTimeout is how long a ping may wait for its pong, or to be
	// written, before the connection is declared dead (see PingInterval).
	// Default: DefaultPingTimeout.
	PingTimeout time.Duration

	// Compression negotiates permessage-deflate (without context takeover,
	// so an idle connection holds no compressor state). Default: off.
	Compression bool
}

// noLimit is what a negative MaxMessageSize becomes: more than any message,
// with room to add to it.
const noLimit = math.MaxInt64 / 4

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	switch {
	case c.MaxMessageSize == 0:
		c.MaxMessageSize = DefaultMaxMessageSize
	case c.MaxMessageSize < 0:
		c.MaxMessageSize = noLimit
	}
	if c.PingInterval == 0 {
		c.PingInterval = DefaultPingInterval
	}
	if c.PingTimeout <= 0 {
		c.PingTimeout = DefaultPingTimeout
	}
	return c
}

// oneOf returns the one DialOptions given, or the zero value.
func oneOf(opts []DialOptions) DialOptions {
	switch len(opts) {
	case 0:
		return DialOptions{}
	case 1:
		return opts[0]
	}
	panic("ws: more than one DialOptions")
}
