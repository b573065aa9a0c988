package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A Peer is one end of a JSON-RPC 2.0 connection, client and server at once:
// it calls and notifies the other side, and serves what the other side sends
// with its Handler. There is no designated client or server end.
//
// Concurrency: all methods of a Peer are safe to call from any goroutine,
// including from inside its own handlers.
//
//   - Inbound calls run concurrently, at most Options.MaxConcurrent handlers
//     at once. The elements of an inbound batch are served in turn by the
//     goroutine that took the batch; when handlers block, helpers join, up
//     to Options.BatchConcurrency elements at once, each in a slot of its
//     own, and one reply array is written when all are done.
//   - Inbound notifications run one at a time, in arrival order, whether
//     alone or in a batch, and a call does not start before the
//     notifications that arrived ahead of it are done (unless
//     Options.ConcurrentNotifications; see the package doc).
//   - Replies to the Peer's own calls are routed by the read loop the moment
//     they arrive: it never runs user code and never waits for a handler
//     slot, so a handler may call back the remote side (even with every slot
//     busy) without deadlock.
//   - A handler waiting in a Call or Batch of its own Peer (with its ctx)
//     gives up its slot until the reply comes (once, however many calls it
//     makes at a time), so that nested calls back into the Peer (A calls B,
//     whose handler calls A, whose handler calls B...) run even when every
//     slot is busy.
//   - A handler may call Close; handlers still running then see their ctx
//     cancelled. A handler must not call Wait, which waits for it.
//   - One writer goroutine writes whole messages in order; a failed write
//     ends the connection. See the package doc for flow control.
type Peer struct {
	conn    Conn
	handler Handler
	opts    Options
	log     *slog.Logger

	panicLogged    atomic.Int64 // when logPanic last wrote to the slog.Default fallback (UnixNano)
	panicsUnlogged atomic.Int64 // panics not logged since, at most one a second going to the fallback

	ctx    context.Context // lifetime: ends with the connection; carries the Peer
	cancel context.CancelFunc

	nextID  atomic.Int64
	pending pendingTable
	inbound dispatcher
	out     sendQueue       // every message sent; its writer owns conn.Write
	decoder decoder         // the read loop's
	gone    <-chan struct{} // the Conn's Watcher channel, or nil
	watcher Watcher         // the Conn, if it is one
	maxMsg  int             // the Conn's Limiter size, or 0
	router  Router          // the Conn, if it is one
	reads   uint64          // the read loop's: Reads so far (see Router)
	drainBy time.Time       // the read loop's: when draining after a clean end must be over

	wg       sync.WaitGroup // the read loop and every goroutine it or goOwned starts
	readDone chan struct{}

	mu          sync.Mutex
	readStopped bool // no goroutine may join wg any more
	ended       bool // end has run the hooks
	// panicFallback: no Logger was set, so handlers' panics go to
	// slog.Default, bounded (logPanic). Set once, before any handler runs.
	panicFallback bool
	eof           error          // the remote ended its stream cleanly: drain, then end
	eofSeen       chan struct{}  // closed when eof is set
	drainTimer    *time.Timer    // ends the Peer once draining after a clean Gone is over (see endAfterDrain)
	endHooks      map[int]func() // run once the connection has ended
	nextHook      int
	endOnce       sync.Once
	readStarted   atomic.Bool           // beside endOnce, in its padding: see TestPeerSizeClass
	endErr        atomic.Pointer[error] // set first thing when the connection ends
	done          chan struct{}         // closed when the connection has ended
	cause         error                 // why it ended; nil after a clean end
	closeErr      error                 // what conn.Close returned
}

// errLocalClose is the cause recorded when Close ends the connection.
var errLocalClose = errors.New("closed locally")

// NewPeer starts a Peer on conn, configured by opts (optional: at most one;
// none gives the defaults, a client that serves no methods), and starts
// reading at once. The Peer owns conn from now on and closes it when the
// connection ends.
//
//	p := jsonrpc.NewPeer(conn)                                // a client
//	p := jsonrpc.NewPeer(conn, jsonrpc.Options{Handler: mux}) // serving mux
func NewPeer(conn Conn, opts ...Options) *Peer {
	p := newPeer(conn, opts)
	p.wg.Add(1) // the read loop's, from now: OnConnect may start goroutines
	if p.opts.OnConnect != nil {
		// Before the read loop counts as started: a Close or Shutdown
		// from OnConnect (a server refusing the connection) must not wait
		// for a read loop that only starts once OnConnect returns. It
		// finds the Conn closed and stops at once.
		p.opts.OnConnect(p)
	}
	p.readStarted.Store(true)
	go p.readLoop()
	return p
}

// Serve runs a Peer on conn as NewPeer does, but reads on the calling
// goroutine, and returns Wait's result once the connection has ended and
// every handler has returned: a server that gives each connection a
// goroutine of its own (an http.Handler, say) spends no second one on the
// read loop. Options.OnConnect gets the Peer before anything is read.
func Serve(conn Conn, opts ...Options) error {
	p := newPeer(conn, opts)
	p.wg.Add(1) // the read loop's, from now: OnConnect may start goroutines or Wait
	if p.opts.OnConnect != nil {
		p.opts.OnConnect(p)
	}
	p.readStarted.Store(true)
	p.readLoop()
	return p.Wait()
}

// newPeer sets up a Peer that does not read yet.
func newPeer(conn Conn, opts []Options) *Peer {
	if len(opts) > 1 {
		panic("jsonrpc: more than one Options")
	}
	var o Options
	if len(opts) == 1 {
		o = opts[0]
	}
	p := &Peer{
		conn:     conn,
		handler:  o.Handler,
		opts:     o.withDefaults(),
		readDone: make(chan struct{}),
		eofSeen:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	p.log = p.opts.Logger
	p.panicFallback = o.Logger == nil // a handler's panic is the program's bug: never silent
	if w, ok := conn.(Watcher); ok {
		p.watcher, p.gone = w, w.Gone()
	}
	if l, ok := conn.(Limiter); ok {
		p.maxMsg = l.MaxMessageSize()
	}
	p.router, _ = conn.(Router)
	if p.handler == nil {
		p.handler = NewMux()
	}
	base := p.opts.BaseContext
	if base == nil {
		base = context.Background()
	}
	// Its values only: the handlers end with the connection, not with the
	// request that opened it, say.
	p.ctx, p.cancel = context.WithCancel(context.WithValue(context.WithoutCancel(base), peerKey{}, p))
	p.pending.max = p.opts.MaxPending
	p.pending.progMax = p.opts.MaxQueuedBytes
	if p.opts.Progress != nil {
		p.pending.tokPrefix = newTokenPrefix()
	}
	p.inbound.init(p)
	p.out.init(p)
	return p
}

// Close ends the connection at once: pending calls fail with ErrClosed,
// messages not yet written are dropped, handlers' contexts are cancelled,
// and the Conn is closed. It returns once the read loop has stopped,
// without waiting for running handlers (so a handler may call it); Wait
// waits for those. Close returns what closing the Conn returned (a child
// process's exit status, say), on every call.
func (p *Peer) Close() error {
	p.end(errLocalClose)
	if p.readStarted.Load() { // not yet, in Serve's ready: it will stop at once
		<-p.readDone
	}
	return p.closeErr
}

// Shutdown ends the connection gracefully: new inbound calls are answered
// with CodeShuttingDown; once the running and queued handlers have returned
// and every reply has been written (or ctx has ended, whichever is first),
// the Peer closes as Close does. It returns ctx's error if ctx cut the wait
// short, else what Close returns.
//
// Called from a handler of this Peer (with its ctx), Shutdown waits for the
// other handlers, not for the calling one, whose reply is then not sent:
// the connection has closed. To answer first, call Shutdown from a new
// goroutine, which waits for the calling handler like any other.
func (p *Peer) Shutdown(ctx context.Context) error {
	var err error
	select {
	case <-p.inbound.drain(p.inbound.handlerOf(ctx) != nil):
		err = p.out.flush(ctx)
	case <-p.done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	return err
}

// Wait blocks until the connection has ended and every handler has returned,
// then returns the cause: nil for a clean end (Close, or the remote closing
// the stream between messages), otherwise the error that ended it.
func (p *Peer) Wait() error {
	<-p.done
	p.wg.Wait()
	if p.cause == errLocalClose || errors.Is(p.cause, io.EOF) {
		return nil
	}
	return p.cause
}

// RemoteAddr returns the network address of the remote side, as the Conn
// gives it (see RemoteAddresser), or nil when the Conn does not know it (a
// Pipe, stdio over a process's pipes). It asks the Conn on every call and
// keeps nothing in the Peer; the transports' answers cost nothing, but
// httprpc's server Conns parse the request's address each time: keep the
// result (the otel module asks once per Peer).
func (p *Peer) RemoteAddr() net.Addr {
	if ra, ok := p.conn.(RemoteAddresser); ok {
		return ra.RemoteAddr()
	}
	return nil
}

// Done returns a channel that is closed when the connection has ended.
// The Peer fails its pending calls first, so a Call may return an error
// wrapping ErrClosed a moment before Done is closed, or, once the remote
// side has ended cleanly, for as long as the Peer drains what it read
// (Options.DrainTimeout); wait on Done (or Wait) to know that the Peer has
// ended.
func (p *Peer) Done() <-chan struct{} { return p.done }

// end records why the connection ended and releases everything waiting on
// it. Only the first call has an effect.
func (p *Peer) end(cause error) {
	p.endOnce.Do(func() {
		p.cause = cause
		// The end error first: from now on nothing more is written (a
		// handler whose own call just failed must not send that failure
		// to the other side), and whoever is refused finds the cause in
		// the error; then the pending table, then the lifetime ctx.
		endErr := closedBy(cause)
		p.endErr.Store(&endErr)
		p.pending.close(endErr)
		p.cancel()
		p.inbound.close()
		p.out.close(endErr)
		close(p.done)
		p.closeErr = p.conn.Close() // last: a close handshake may take a while
		p.mu.Lock()
		hooks := p.endHooks
		p.endHooks, p.ended = nil, true
		if p.drainTimer != nil {
			p.drainTimer.Stop()
		}
		p.mu.Unlock()
		// In registration order. The keys go in an array on the stack
		// when there are few: httprpc ends two Peers every plain POST.
		keys := make([]int, 0, 8)
		for k := range hooks {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			hooks[k]()
		}
		// A connection that ends is normal life (a tab closing, a link
		// dropping, a client that stops reading): nothing for a human.
		if cause != errLocalClose && !errors.Is(cause, io.EOF) {
			p.log.Info("jsonrpc: connection ended", "cause", cause)
		}
	})
}

// AfterFunc arranges for f to run, on its own goroutine, once the
// connection has ended (at once if it has), after Done is closed. Calling
// the returned stop stops that; stop reports whether it did, that is
// whether f had not been started. It lets a registry (a Group, a topic
// that spans many nodes) forget a member when it goes, without a goroutine
// per member waiting on Done.
func (p *Peer) AfterFunc(f func()) (stop func() bool) {
	return p.afterEnd(func() { go f() })
}

// afterEnd registers f to run once the connection has ended, or runs it now
// if it has; stop unregisters it and reports whether it had not run.
func (p *Peer) afterEnd(f func()) (stop func() bool) {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		f()
		return func() bool { return false }
	}
	if p.endHooks == nil {
		p.endHooks = make(map[int]func())
	}
	k := p.nextHook
	p.nextHook++
	p.endHooks[k] = f
	p.mu.Unlock()
	return func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		_, ok := p.endHooks[k]
		delete(p.endHooks, k)
		return ok
	}
}

// goOwned runs f on a goroutine that Wait waits for. It reports false, and
// runs nothing, once the read loop has stopped: the connection has ended.
func (p *Peer) goOwned(f func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.readStopped {
		return false
	}
	p.wg.Add(1) // the read loop still holds a count: safe against Wait
	go func() {
		defer p.wg.Done()
		f()
	}()
	return true
}

// goneErr is why the Conn's Gone channel was closed.
func (p *Peer) goneErr() error {
	if err := p.watcher.GoneErr(); err != nil {
		return err
	}
	return errors.New("the transport says so")
}

// closedErr is the error an operation returns once the connection ended.
func (p *Peer) closedErr() error {
	if err := p.endErr.Load(); err != nil {
		return *err
	}
	if err := p.pending.err(); err != nil { // draining after a clean EOF
		return err
	}
	return ErrClosed
}

// write queues msg and waits until it has been written, or ctx or the
// connection ends. A message still queued when ctx ends is withdrawn; one
// being written may yet arrive.
func (p *Peer) write(ctx context.Context, msg []byte, buf *msgBuf) error {
	m, err := p.out.send(&outgoing{data: msg, buf: buf, ctx: ctx, written: true, read: p.readOf(ctx)})
	if err != nil || m == nil { // failed, or written in place
		return err
	}
	p.out.watch(1)
	defer p.out.watch(-1)
	select {
	case <-m.written:
		return m.err
	case <-ctx.Done():
		p.out.withdraw(m)
		return ctx.Err()
	}
}

// eofGrace is how long a failed write waits for the read loop to see the
// stream's clean end, which a write to a closed connection often fails
// just before.
const eofGrace = 100 * time.Millisecond

// writeFailure returns the cause to end the connection with after a write
// failed with err. The write may have failed because the other side closed
// the connection cleanly, which the read loop is about to see as io.EOF:
// give it a moment before blaming the write, so that a clean end is
// reported as one.
func (p *Peer) writeFailure(err error) error {
	t := time.NewTimer(eofGrace)
	defer t.Stop()
	select {
	case <-p.eofSeen:
	case <-p.done:
	case <-t.C:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.eof != nil { // after a clean end, a failed reply is no new failure
		return p.eof
	}
	return fmt.Errorf("write failed: %w", err)
}

func (p *Peer) newID() ID { return ID{raw: strconv.FormatInt(p.nextID.Add(1), 10)} }

// Call calls method on the remote side with params (nil for none; otherwise
// a value that marshals to a JSON object or array) and unmarshals the
// result into result (nil to discard it). It blocks until the reply arrives,
// ctx ends or the connection ends. An error reply is returned as an *Error.
// When ctx ends first, the call is forgotten (a late reply is dropped) and a
// cancel notification is sent in Options.Cancel's dialect, if set.
//
// A request longer than the Conn carries (see Limiter) fails at once with
// ErrMessageTooLarge. An error reply with id null (the remote side could
// not read a message's id: a parse error, a message too long) fails the
// waiting calls when it can only be the answer to their message: this
// call alone, or one Batch, waiting, sent last, and sent right after a
// message the remote side has answered (it reads in order). Otherwise it
// names none of them (it may answer a notification of ours the remote
// could not read), and is logged and dropped; the calls wait on.
//
// A handler calling its own Peer with its ctx (or one derived from it) gives
// up its handler slot while it waits for the reply, so that the remote side
// may call back into this Peer even when every slot is taken.
func (p *Peer) Call(ctx context.Context, method string, params, result any) error {
	if ctx == nil {
		return ErrNilContext
	}
	sink, err := p.newSink(ctx)
	if err != nil {
		return err
	}
	id := p.newID()
	if len(p.opts.Interceptors) == 0 && sink == nil {
		msg, err := encodeRequest(id, method, params)
		if err != nil {
			return err
		}
		resp, err := p.roundTrip(ctx, id, msg, nil)
		if err != nil {
			return err
		}
		return decodeResult(&resp, result, method)
	}
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	if sink != nil {
		if raw, err = p.opts.Progress.Inject(raw, sink.work, sink.partial); err != nil {
			return err
		}
		if len(p.opts.Interceptors) == 0 {
			msg := newMsgBuf()
			msg.b = appendRequest(msg.b, id, method, raw)
			resp, err := p.roundTrip(ctx, id, msg, sink)
			if err != nil {
				return err
			}
			return decodeResult(&resp, result, method)
		}
	}
	info := &CallInfo{Peer: p, Outbound: true, Method: method, ID: id, Params: raw}
	v, err := p.intercept(ctx, info, func(ctx context.Context) (any, error) {
		if err := checkParams(info.Params); err != nil {
			return nil, err
		}
		msg := newMsgBuf()
		msg.b = appendRequest(msg.b, id, method, info.Params)
		resp, err := p.roundTrip(ctx, id, msg, sink)
		return invokerResult(method, &resp, err)
	})
	if err != nil {
		return err
	}
	rawRes, err := rawResult(v)
	if err != nil {
		return err
	}
	return decodeResult(&response{Result: rawRes}, result, method)
}

// roundTrip sends the request msg, whose id is id, and waits for its reply,
// ctx or the end of the connection. A handler's slot is given back for the
// whole wait, room in the outbound queue included.
//
// With a progress sink, the caller's progress functions run here, on the
// caller's goroutine, as progress arrives; once the outcome is in, those
// of the progress that arrived before it that have not run yet run, in
// order, before roundTrip returns.
func (p *Peer) roundTrip(ctx context.Context, id ID, msg *msgBuf, sink *progressSink) (response, error) {
	ch, err := p.pending.add(id, sink)
	if err != nil {
		msg.free()
		return response{}, err
	}
	defer p.inbound.park(ctx)()
	// m is nil when written in place, which only a ctx that never ends
	// allows: then the ctx.Done case below cannot happen.
	m, err := p.out.send(&outgoing{data: msg.b, buf: msg, ctx: ctx, read: p.readOf(ctx), id: id})
	if err != nil {
		msg.free()
		p.pending.forget(id)
		return response{}, err
	}
	var ready chan struct{} // nil, never ready, without a sink
	if sink != nil {
		ready = sink.ready
	}
	var (
		resp response
		ok   bool // false: the connection ended
	)
wait:
	for {
		select {
		case resp, ok = <-ch:
		case <-ready:
			p.runProgress(sink)
			continue
		case <-ctx.Done():
			if p.pending.forget(id) {
				if !p.out.withdraw(m) { // it went out: tell the other side
					p.sendCancel(ctx, id)
				}
				return response{}, ctx.Err()
			}
			resp, ok = <-ch // the outcome won the race
		}
		break wait
	}
	if sink != nil {
		p.runProgress(sink)
	}
	return p.delivered(resp, ok)
}

// delivered turns what the pending table delivered into a reply or the
// connection's end error (ok false: the channel was closed).
func (p *Peer) delivered(resp response, ok bool) (response, error) {
	switch {
	case !ok:
		return response{}, p.closedErr()
	case resp.invalid != nil:
		return response{}, resp.invalid
	}
	return resp, nil
}

// decodeResult returns the reply's error (the other side's answer to a
// call of method: see fromCall), or unmarshals its result into result
// (unless result is nil).
func decodeResult(resp *response, result any, method string) error {
	switch {
	case resp.Error != nil:
		return fromCall(resp.Error, method)
	case result == nil:
		return nil
	}
	if err := unmarshalJSON(resp.Result, result); err != nil {
		return fmt.Errorf("jsonrpc: %s: failed to unmarshal the result: %w", method, err)
	}
	return nil
}

// sendCancel tells the remote side that we stopped waiting for ids. The
// notifications are queued without waiting, ahead of anything the caller
// writes next; when the remote side leaves even the control budget unread,
// they are dropped: a cancellation is advice, and ctx (the caller's) goes
// with the record logged then.
func (p *Peer) sendCancel(ctx context.Context, ids ...ID) {
	c := p.opts.Cancel
	if c == nil {
		return
	}
	for _, id := range ids {
		if !p.out.control(appendRequest(nil, ID{}, c.Method, c.Params(id)), 0) {
			p.log.DebugContext(ctx, "jsonrpc: cancel notification not sent: the remote side is not reading", "id", id.raw)
			return
		}
	}
}

// Notify sends a notification: no reply comes, and none is awaited. params
// are as for Call. It returns once the message is written, or when ctx ends
// first: a notification still queued then is never sent, one being written
// may yet arrive.
func (p *Peer) Notify(ctx context.Context, method string, params any) error {
	if ctx == nil {
		return ErrNilContext
	}
	if len(p.opts.Interceptors) == 0 {
		msg, err := encodeRequest(ID{}, method, params)
		if err != nil {
			return err
		}
		return p.write(ctx, msg.b, msg)
	}
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	info := &CallInfo{Peer: p, Outbound: true, Method: method, Params: raw}
	_, err = p.intercept(ctx, info, func(ctx context.Context) (any, error) {
		if err := checkParams(info.Params); err != nil {
			return nil, err
		}
		return nil, p.write(ctx, appendRequest(nil, ID{}, method, info.Params), nil)
	})
	return err
}
