package jsonrpc

import (
	"context"
	"log/slog"
	"math"
	"time"
)

// Options configure a Peer: NewPeer and Serve take at most one Options
// value, and the zero value (or none) gives the defaults each field
// documents.
//
// Every limit and timeout follows one convention: zero means the default
// the field documents, and a negative value turns the limit or the timeout
// off.
type Options struct {
	// Handler serves the requests the other side sends. Default: none, so
	// every call is answered with Method not found (a client that serves
	// nothing).
	Handler Handler

	// OnConnect, if set, is called with the Peer before it reads its first
	// message, so that what it sets up (a Group membership, say) is in
	// place for the first request. It may call Close or Shutdown to refuse
	// the connection: NewPeer (or Serve) then returns a Peer that has
	// ended, having read nothing.
	OnConnect func(*Peer)

	// BaseContext is the context the Peer's handlers' contexts derive
	// from: they carry its values (the authenticated user that HTTP
	// middleware put in a request's context, say), but not its deadline
	// or cancellation; they end with the connection. Default:
	// context.Background(). ws.Server lays each upgrade request's context
	// over it: its handlers see the request's values, and this context's
	// for keys the request has none for.
	BaseContext context.Context

	// Logger receives what the Peer cannot report to a caller: dropped
	// replies, handler panics, notification errors. Default: silent, but
	// for a handler's panic, which goes to slog.Default at Error
	// (TestHandlerPanicLoggedByDefault): it is the program's own bug; at
	// most one a second per Peer there, with the count of those not
	// logged, so that a remote side cannot flood the process's log
	// (TestReviewPanicLogIsBounded).
	Logger *slog.Logger

	// MaxConcurrent bounds the call handlers that run at once, the
	// elements of inbound batches included; a handler waiting for the
	// reply to a Call or Batch it made on its own Peer (with its ctx) does
	// not count while it waits, and takes a slot back before that Call
	// returns. When the Call's ctx ends while no slot is free, the Call
	// returns at once all the same and the handler goes on with its slot
	// on credit: it counts at once, over the limit if need be, and no
	// queued call starts until the lane is back under it. Default: 64,
	// which suits I/O-bound handlers.
	MaxConcurrent int

	// MaxQueued bounds the inbound calls and batches waiting for a handler,
	// and the handlers waiting for the reply to a Call they made on their
	// own Peer. MaxQueuedBytes bounds the bytes of the inbound requests
	// waiting or being handled, notifications included, each charged what
	// it keeps alive (the capacity of the message it came in, or of its
	// own copy) plus 256 bytes, and of the replies of inbound batches
	// until each batch's reply arrays are queued. A call or batch that does not
	// fit is answered at once with a CodeOverloaded error, and so is a
	// batch element that would start once the budget is full (the first
	// element of a batch always runs). A notification that does not fit,
	// alone or in a batch, makes the read loop wait for room, pushing back
	// on the sender through the transport, unless something on this side
	// waits on the remote side (a reply, room to write, or a write), which
	// could deadlock the two (see the package doc); then it is taken
	// beyond the budget, up to twice it, and past that the connection ends
	// with a cause wrapping ErrOverloaded. Notifications are never
	// dropped. A single message larger than MaxQueuedBytes is taken when
	// nothing else is held. Defaults: 4096 calls, 4 MiB.
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
	// none of it runs. It bounds outgoing batches too, since a remote side
	// configured alike would refuse them so: Batch fails at once with
	// ErrBatchTooLarge. Default: 1000. A negative value means no limit.
	MaxBatch int

	// BatchConcurrency bounds the elements of one inbound batch whose
	// handlers run at once; each takes a MaxConcurrent slot of its own.
	// Elements are served in turn until one blocks: helpers join only
	// while no element finishes (see the package doc). Default: 16.
	BatchConcurrency int

	// ConcurrentNotifications lets inbound notifications run concurrently,
	// like calls, and calls start without waiting for them. By default
	// notifications run one at a time in arrival order, and a call waits
	// for the notifications that arrived before it, which protocols such
	// as LSP rely on.
	ConcurrentNotifications bool

	// Cancel is the cancellation dialect of the protocol spoken: when a
	// Call's ctx ends before its reply, the Peer sends the dialect's
	// notification, and an incoming one cancels the ctx of the handler it
	// names. The JSON-RPC specification defines none, so by default
	// (nil) a Peer sends none and recognises none: a server that knows
	// neither dialect would answer one with an error, or take it for a
	// method of its own. Set LSPCancel or MCPCancel, or a dialect of your
	// own.
	Cancel *CancelDialect

	// Progress is the progress dialect of the protocol spoken: a Call
	// whose ctx carries a function (WithProgress, WithPartialResults) puts
	// tokens in its params, and the progress notifications for them are
	// routed by the read loop to that call, as its reply is, never through
	// the Handler; a handler reports progress with ReportProgress. The
	// progress of every call waiting for its caller's function is bounded
	// by a budget of MaxQueuedBytes of its own (each value charged its
	// size plus 64 bytes); a progress notification that does not fit
	// fails its call at once with an error wrapping ErrOverloaded (the
	// call is forgotten and cancelled in the Cancel dialect), rather than
	// make the read loop wait for a caller's function. By default (nil)
	// there is none: progress notifications are notifications like any
	// other. Set LSPProgress or MCPProgress, or a dialect of your own.
	Progress *ProgressDialect

	// DrainTimeout bounds how long the Peer keeps serving after the remote
	// side ends its stream cleanly (io.EOF, as when a client closes a
	// child's stdin after writing its requests; or, while the Peer pushes
	// back, a Watcher's Gone with an error wrapping io.EOF, as when a
	// child exits with status 0): it fails its own pending calls at once,
	// serves what it has read (notifications it was pushing back on
	// included), and lets running and queued handlers finish and write
	// their replies, for at most DrainTimeout from when it saw the end,
	// before it ends. Default: 1 s. A negative value ends the Peer at
	// once.
	DrainTimeout time.Duration

	// PackNotifications, if 2 or more, writes the notifications a Group
	// (or a topic.Hub, which broadcasts through one) has queued for this
	// Peer, when more than one is waiting, as one JSON-RPC batch array in
	// one message: up to PackNotifications of them (and no more than
	// MaxBatch), within the Conn's message size limit and 16 KiB (the
	// remote's read limit is unknown here: coder/websocket's clients read
	// 32 KiB by default; a single larger notification goes alone). JSON-RPC
	// 2.0 answers a batch of notifications with nothing, so the remote
	// side sends no reply; it must take batches,
	// though, and handle their notifications in order, as this package
	// does unless its ConcurrentNotifications is set
	// (TestPackedNotificationsArriveInOrder) and jsonrpc.js does; a remote
	// whose MaxBatch is lower refuses the larger arrays
	// (TestPackNotificationsBounded holds the bounds). A broadcast that
	// finds its member's queue empty is written alone as before, and
	// everything else the Peer sends (calls, replies, its own Notify) keeps
	// a message of its own. A Group's broadcasts are written by the
	// member's own writer, so a broadcast may reach the remote after a
	// later Notify, call or reply of the Peer's, packed or not (see
	// Group; TestGroupAndPeerNotifyEachInOrder). Default: 0, each
	// notification in a message of its own (values below 2 mean the same).
	PackNotifications int

	// WriteTimeout, if positive, bounds each write to the Conn: a remote
	// side that takes no data for that long (a stuck browser tab, a child
	// that stopped reading) ends the connection with a cause wrapping
	// ErrWriteTimeout, instead of holding the Peer's writers forever.
	// Default: no bound.
	WriteTimeout time.Duration

	// Interceptors wrap every inbound handler and every outbound call and
	// notification, the first outermost; see Interceptor. A nil entry is
	// skipped (a telemetry that records nothing may give one), and a Peer
	// whose entries are all nil costs what one without them does.
	// Default: none.
	Interceptors []Interceptor

	// MapError turns a handler's error into the error object sent back.
	// Default: DefaultMapError, which sends an *Error of the handler's as
	// is, and hides the text of any other error (the other side's answer
	// to the handler's own call included, unless passed through Forward).
	MapError func(error) *Error
}

// noLimit is what a negative limit becomes: more than can be reached, with
// room to be doubled.
const noLimit = math.MaxInt / 4

// limit applies the convention: zero is def, negative is no limit.
func limit(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return noLimit
	}
	return v
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
	c.MaxConcurrent = limit(c.MaxConcurrent, 64)
	c.MaxQueued = limit(c.MaxQueued, 4096)
	c.MaxQueuedBytes = limit(c.MaxQueuedBytes, 4<<20)
	c.MaxOutboundBytes = limit(c.MaxOutboundBytes, 4<<20)
	c.MaxPending = limit(c.MaxPending, 10000)
	c.MaxBatch = limit(c.MaxBatch, 1000)
	c.BatchConcurrency = limit(c.BatchConcurrency, 16)
	if c.DrainTimeout == 0 {
		c.DrainTimeout = time.Second
	}
	if c.MapError == nil {
		c.MapError = DefaultMapError
	}
	c.Interceptors = withoutNil(c.Interceptors)
	return c
}

// withoutNil returns ics without its nil entries: ics itself when it has
// none, nil when it has nothing else.
func withoutNil(ics []Interceptor) []Interceptor {
	n := 0
	for _, ic := range ics {
		if ic != nil {
			n++
		}
	}
	switch n {
	case len(ics):
		return ics
	case 0:
		return nil
	}
	out := make([]Interceptor, 0, n)
	for _, ic := range ics {
		if ic != nil {
			out = append(out, ic)
		}
	}
	return out
}
