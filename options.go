package jsonrpc

import (
	"log/slog"
	"time"
)

// Options configure a Peer. The zero value, and a nil *Options, give the
// defaults each field documents.
type Options struct {
	// Logger receives what the Peer cannot report to a caller: dropped
	// replies, handler panics, notification errors. Default: silent.
	Logger *slog.Logger

	// MaxConcurrent bounds the call handlers that run at once, the
	// elements of inbound batches included; a handler waiting for the
	// reply to a Call or Batch it made on its own Peer (with its ctx) does
	// not count while it waits. Default: 64, which suits I/O-bound
	// handlers.
	MaxConcurrent int

	// MaxQueued bounds the inbound calls and batches waiting for a handler,
	// and the handlers waiting for the reply to a Call they made on their
	// own Peer. MaxQueuedBytes bounds the bytes of the inbound requests
	// waiting or being handled, notifications included, each charged its
	// size plus 256 bytes. A call or batch that does not fit is answered at
	// once with a CodeOverloaded error. A notification that does not fit
	// makes the read loop wait for room, pushing back on the sender through
	// the transport, unless something on this side waits on the remote
	// side (a reply, room to write, or a write), which could deadlock the
	// two (see the package doc); then it is taken beyond the budget, up to
	// twice it, and past that the connection ends with a cause wrapping
	// ErrOverloaded. Notifications are never dropped. A single message
	// larger than MaxQueuedBytes is taken when nothing else is held.
	// Defaults: 4096 calls, 4 MiB.
	MaxQueued      int
	MaxQueuedBytes int

	// MaxOutboundBytes bounds the bytes of messages queued for writing and
	// not yet written: calls, notifications and replies wait for room (a
	// Call or Notify until its ctx ends), so a remote side that reads
	// slowly holds back this side's handlers rather than its memory. A
	// single message larger than the budget goes alone. Default: 4 MiB.
	MaxOutboundBytes int

	// MaxPending bounds this Peer's own calls waiting for replies; a Call
	// (or a Batch element) beyond it fails at once with ErrTooManyPending.
	// Default: 10000.
	MaxPending int

	// MaxBatch bounds the number of elements in an inbound batch; a longer
	// batch is answered with a single Invalid Request error (id null) and
	// none of it runs. Default: 1000. A negative value means no limit.
	MaxBatch int

	// BatchConcurrency bounds the elements of one inbound batch whose
	// handlers run at once; each takes a MaxConcurrent slot of its own.
	// Default: 16.
	BatchConcurrency int

	// ConcurrentNotifications lets inbound notifications run concurrently,
	// like calls, and calls start without waiting for them. By default
	// notifications run one at a time in arrival order, and a call waits
	// for the notifications that arrived before it, which protocols such
	// as LSP rely on.
	ConcurrentNotifications bool

	// CancelMethod names the notification that cancels a call, in both
	// directions: the Peer sends it with params {"id": ID} when a Call's ctx
	// ends before its reply, and cancels the ctx of the handler whose id an
	// incoming one names. Default: "$/cancelRequest", as LSP defines it.
	CancelMethod string

	// NoCancel stops the Peer from sending CancelMethod notifications. An
	// incoming one still cancels its handler.
	NoCancel bool

	// DrainTimeout bounds how long the Peer keeps serving after the remote
	// side ends its stream cleanly (io.EOF, as when a client closes a
	// child's stdin after writing its requests): it stops reading, fails
	// its own pending calls at once, and lets running and queued handlers
	// finish and write their replies, for at most DrainTimeout, before it
	// ends. Default: 1 s. A negative value ends the Peer at once.
	DrainTimeout time.Duration

	// WriteTimeout, if positive, bounds each write to the Conn: a remote
	// side that takes no data for that long (a stuck browser tab, a child
	// that stopped reading) ends the connection with a cause wrapping
	// ErrWriteTimeout, instead of holding the Peer's writers forever.
	// Default: no bound.
	WriteTimeout time.Duration

	// Interceptors wrap every inbound handler and every outbound call and
	// notification, the first outermost; see Interceptor. Default: none.
	Interceptors []Interceptor

	// MapError turns a handler's error into the error object sent back.
	// Default: DefaultMapError, which sends an *Error as is and hides the
	// text of any other error.
	MapError func(error) *Error
}

// withDefaults returns a copy of o with every zero field set to its default.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 64
	}
	if c.MaxQueued <= 0 {
		c.MaxQueued = 4096
	}
	if c.MaxQueuedBytes <= 0 {
		c.MaxQueuedBytes = 4 << 20
	}
	if c.MaxOutboundBytes <= 0 {
		c.MaxOutboundBytes = 4 << 20
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 10000
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 1000
	}
	if c.BatchConcurrency <= 0 {
		c.BatchConcurrency = 16
	}
	if c.CancelMethod == "" {
		c.CancelMethod = "$/cancelRequest"
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = time.Second
	}
	if c.MapError == nil {
		c.MapError = DefaultMapError
	}
	return c
}
