package jsonrpc

import (
	"log/slog"
)

// Options configure a Peer. The zero value, and a nil *Options, give the
// defaults each field documents.
type Options struct {
	// Logger receives what the Peer cannot report to a caller: dropped
	// replies, handler panics, notification errors. Default: silent.
	Logger *slog.Logger

	// MaxConcurrent bounds the calls (and batches) whose handlers run at
	// once. Default: 64, which suits I/O-bound handlers.
	MaxConcurrent int

	// MaxQueued bounds the inbound calls, batches and notifications waiting
	// for a handler. When it is reached, a call or batch is answered at once
	// with a CodeOverloaded error and a notification is dropped and logged;
	// the Peer never stops reading, so replies to its own calls keep
	// flowing. Default: 4096.
	MaxQueued int

	// MaxBatch bounds the number of elements in an inbound batch; a longer
	// batch is answered with a single Invalid Request error (id null) and
	// none of it runs. Default: 1000. A negative value means no limit.
	MaxBatch int

	// BatchConcurrency bounds the elements of one inbound batch whose
	// handlers run at once. Default: 16.
	BatchConcurrency int

	// ConcurrentNotifications lets inbound notifications run concurrently,
	// like calls. By default they run one at a time in arrival order, which
	// protocols such as LSP rely on.
	ConcurrentNotifications bool

	// CancelMethod names the notification that cancels a call, in both
	// directions: the Peer sends it with params {"id": ID} when a Call's ctx
	// ends before its reply, and cancels the ctx of the handler whose id an
	// incoming one names. Default: "$/cancelRequest", as LSP defines it.
	CancelMethod string

	// NoCancel stops the Peer from sending CancelMethod notifications. An
	// incoming one still cancels its handler.
	NoCancel bool

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
	if c.MaxBatch == 0 {
		c.MaxBatch = 1000
	}
	if c.BatchConcurrency <= 0 {
		c.BatchConcurrency = 16
	}
	if c.CancelMethod == "" {
		c.CancelMethod = "$/cancelRequest"
	}
	if c.MapError == nil {
		c.MapError = DefaultMapError
	}
	return c
}
