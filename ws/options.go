package ws

import (
	"time"

	"github.com/peerwire/jsonrpc/internal/msgsize"
)

// Defaults of Options.
const (
	DefaultMaxMessageSize = msgsize.Default // 32 MiB, the stdio transport's cap too
	DefaultPingInterval   = 30 * time.Second
	DefaultPingTimeout    = 15 * time.Second
)

// Options configure a WebSocket connection. The zero value, and a nil
// *Options, give the defaults each field documents, as in jsonrpc.Options:
// zero means the default, and a negative PingInterval turns keepalive off.
type Options struct {
	// MaxMessageSize caps an incoming message, as in the stdio transport.
	// A larger message closes the connection with status 1009 (message too
	// big): a WebSocket message cannot be skipped. No more than the cap is
	// read into memory, whatever a frame header claims (a refusal
	// allocates about twice the cap). Default: DefaultMaxMessageSize.
	MaxMessageSize int64

	// PingInterval is how often a ping checks that the other side is still
	// there; a negative value turns keepalive off. Default:
	// DefaultPingInterval.
	PingInterval time.Duration

	// PingTimeout is how long a ping may wait for its pong before the
	// connection is declared dead and ended with a cause wrapping
	// ErrKeepalive. Default: DefaultPingTimeout.
	PingTimeout time.Duration

	// Compression negotiates permessage-deflate (without context takeover,
	// so an idle connection holds no compressor state). Default: off.
	Compression bool
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxMessageSize <= 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
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
