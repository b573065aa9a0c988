package jsonrpc

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// dispatcher runs inbound requests on handler goroutines. Work goes into one
// of two lanes, calls and notifications, each a FIFO with a bounded number of
// runners; runners are started on demand and exit when their lane is empty,
// so an idle Peer holds no goroutine but its read loop. The work waiting in
// both lanes is bounded by Options.MaxQueued.
//
// A calls-lane handler that waits for a reply in a Call or Batch of its own
// Peer is parked: it gives its slot back while it waits, so that the calls
// the remote side makes back to this Peer meanwhile can run even when every
// slot is taken. Parked handlers count against MaxQueued.
type dispatcher struct {
	p      *Peer
	mu     sync.Mutex
	calls  lane
	notes  lane
	queued int
	parked int // calls-lane handlers waiting for a reply (see park)
	closed bool
	idle   chan struct{} // non-nil while draining; closed when no work is left

	// While notifications are ordered, a call does not start before the
	// notifications that arrived ahead of it have been handled (LSP: a
	// hover after a didChange sees the change), unless one of them waits
	// for a reply of its own, which the remote side might need that very
	// call to give.
	notesIn   uint64        // notifications taken into the ordered lane
	notesDone uint64        // of which handled
	notesHeld int           // notes-lane handlers waiting in Call or Batch
	progress  chan struct{} // closed when notesDone or notesHeld changes
	active    map[ID]task   // inbound calls queued or running, for cancellation
}

// lane is a FIFO of jobs with at most max runners. A runner that finds the
// lane empty lingers for a moment before it exits, so that a steady stream
// of requests reuses one goroutine (whose stack has already grown to what
// the handlers need) instead of starting a new one per request.
type lane struct {
	q       []job
	running int           // runners, lingering ones included
	waiting int           // runners lingering for work
	wake    chan struct{} // wakes lingering runners; never closed
	max     int
	ctx     context.Context // the base of its handlers' ctx
}

// linger is how long a runner waits for more work before it exits.
const linger = 2 * time.Millisecond

// job is one inbound message's work: a single request, or a batch's
// elements (which may include invalid ones that just get their error).
type job struct {
	tasks []task
	batch bool
	after uint64 // a call waits until notesDone reaches it
}

// task is one request and the ctx its handler gets.
type task struct {
	msg    message
	ctx    context.Context
	cancel context.CancelFunc
}

func (d *dispatcher) init(p *Peer) {
	d.p = p
	d.calls.max = p.opts.MaxConcurrent
	d.notes.max = 1
	if p.opts.ConcurrentNotifications {
		d.notes.max = p.opts.MaxConcurrent
	}
	d.calls.wake = make(chan struct{}, d.calls.max)
	d.notes.wake = make(chan struct{}, d.notes.max)
	// Each lane's handlers get a ctx naming the lane, so that they can park
	// (see park); made once here rather than per request.
	d.calls.ctx = context.WithValue(p.ctx, parkKey{}, &d.calls)
	d.notes.ctx = p.ctx
	if d.orderedNotes() {
		d.notes.ctx = context.WithValue(p.ctx, parkKey{}, &d.notes)
	}
}

// submit queues msgs as one job. It reports false, taking nothing, when the
// queue is full.
func (d *dispatcher) submit(msgs []message, batch bool) bool {
	l := &d.calls
	if !batch && msgs[0].req.IsNotification() && msgs[0].invalid == nil {
		l = &d.notes
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return true // the connection ended: nothing will be answered
	}
	if d.idle != nil {
		return false // draining: take no new work
	}
	if d.full(l) {
		return false
	}
	j := job{tasks: make([]task, len(msgs)), batch: batch}
	for i, m := range msgs {
		j.tasks[i] = d.newTask(m, l)
	}
	if d.orderedNotes() {
		if l == &d.notes {
			d.notesIn++
		} else {
			j.after = d.notesIn
		}
	}
	l.q = append(l.q, j)
	d.queued++
	d.kick(l)
	return true
}

// full reports whether l can take no more work. Called with d.mu held.
func (d *dispatcher) full(l *lane) bool {
	max := d.p.opts.MaxQueued
	return l.running >= l.max && d.queued >= max || d.queued+d.parked >= max
}

// waitForNotes is called by the read loop when a notification found the
// queue full. Rather than drop it, the read loop stops reading until there
// is room, which pushes back on the sender through the transport; but only
// while no call of this Peer waits for a reply, which only the read loop
// can deliver. It reports whether there is room now; false means the
// notification is to be dropped (a reply is awaited, or the Peer ends).
func (d *dispatcher) waitForNotes() bool {
	poll := time.NewTicker(10 * time.Millisecond) // to see calls made meanwhile
	defer poll.Stop()
	for {
		d.mu.Lock()
		if d.closed || d.idle != nil {
			d.mu.Unlock()
			return false
		}
		if !d.full(&d.notes) {
			d.mu.Unlock()
			return true
		}
		if d.progress == nil {
			d.progress = make(chan struct{})
		}
		progressed := d.progress
		d.mu.Unlock()
		if d.p.pending.len() > 0 {
			return false
		}
		select {
		case <-progressed:
		case <-poll.C:
		case <-d.p.done:
		}
	}
}

// kick sees to it that a job just queued in l will be run: by a lingering
// runner if there are at least as many of them as queued jobs, else by a
// new runner if l has a free slot, else by the next runner to finish.
// Called with d.mu held, by the read loop or a handler that holds a count
// on the Peer's WaitGroup, so runners may be added to it.
func (d *dispatcher) kick(l *lane) {
	switch {
	case len(l.q) <= l.waiting:
		select {
		case l.wake <- struct{}{}:
		default: // as many wake-ups as lingering runners are pending
		}
	case l.running < l.max:
		l.running++
		d.p.wg.Add(1)
		go d.run(l, d.pop(l))
	}
}

// parkKey marks the ctx of a calls-lane handler with its dispatcher.
type parkKey struct{}

// orderedNotes reports whether notifications run one at a time in order.
func (d *dispatcher) orderedNotes() bool { return d.notes.max == 1 }

// newTask gives a call its own cancellable ctx, registered by id so that a
// cancel notification can reach it; the ctx names the task's lane, so that
// its handler can park (see park). Called with d.mu held.
func (d *dispatcher) newTask(m message, l *lane) task {
	t := task{msg: m, ctx: l.ctx}
	if m.invalid != nil || m.req.IsNotification() {
		return t
	}
	t.ctx, t.cancel = context.WithCancel(t.ctx)
	if d.active == nil {
		d.active = make(map[ID]task)
	}
	if _, dup := d.active[m.req.ID]; !dup {
		d.active[m.req.ID] = t
	}
	return t
}

// run serves j, then whatever is queued in l, and exits once l has stayed
// empty for the linger time.
func (d *dispatcher) run(l *lane, j job) {
	defer d.p.wg.Done()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if j.after > 0 {
			d.awaitNotes(j.after)
		}
		d.p.runJob(j)
		d.mu.Lock()
		if l == &d.notes && d.orderedNotes() {
			d.notesDone++
			d.notesProgressed()
		}
		for len(l.q) == 0 && !d.closed && l.running <= l.max {
			if timer == nil {
				timer = time.NewTimer(linger)
			} else {
				timer.Reset(linger)
			}
			l.waiting++
			d.signalIdle()
			d.mu.Unlock()
			expired := false
			select {
			case <-l.wake:
			case <-timer.C:
				expired = true
			case <-d.p.done:
			}
			d.mu.Lock()
			l.waiting--
			if expired {
				break
			}
		}
		// running exceeds max when parked handlers have taken their
		// slots back: then this runner leaves the queue to the others.
		if len(l.q) == 0 || d.closed || l.running > l.max {
			l.running--
			d.signalIdle()
			d.mu.Unlock()
			return
		}
		j = d.pop(l)
		d.mu.Unlock()
	}
}

// pop takes the first job queued in l. Called with d.mu held.
func (d *dispatcher) pop(l *lane) job {
	j := l.q[0]
	l.q[0] = job{}
	l.q = l.q[1:]
	d.queued--
	return j
}

// awaitNotes waits until the ordered notifications up to after have been
// handled, or one of them waits for a reply, or the connection has ended.
func (d *dispatcher) awaitNotes(after uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.notesDone < after && d.notesHeld == 0 && !d.closed {
		if d.progress == nil {
			d.progress = make(chan struct{})
		}
		ch := d.progress
		d.mu.Unlock()
		select {
		case <-ch:
		case <-d.p.done:
		}
		d.mu.Lock()
	}
}

// notesProgressed wakes the calls waiting in awaitNotes. Called with d.mu
// held.
func (d *dispatcher) notesProgressed() {
	if d.progress != nil {
		close(d.progress)
		d.progress = nil
	}
}

// park is called by Call and Batch before they wait for a reply. If ctx is
// that of a calls-lane handler of this dispatcher, the handler gives its
// slot back, and a queued job may start in its place; the returned func
// takes the slot back, which may leave the lane above its limit until a
// runner finishes its job. If ctx is that of an ordered notification, the
// calls that wait for it may start.
func (d *dispatcher) park(ctx context.Context) (unpark func()) {
	l, _ := ctx.Value(parkKey{}).(*lane)
	if l == nil || l != &d.calls && l != &d.notes || ctx.Err() != nil {
		return func() {}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if l == &d.notes {
		// An ordered notification keeps its place (the next one must not
		// start), but the calls it holds back may run meanwhile.
		d.notesHeld++
		d.notesProgressed()
		return func() {
			d.mu.Lock()
			d.notesHeld--
			d.mu.Unlock()
		}
	}
	l.running--
	d.parked++
	// A runner may join the WaitGroup here: while the dispatcher is not
	// closed, the read loop still holds a count on it.
	if !d.closed && len(l.q) > 0 {
		d.kick(l)
	}
	return func() {
		d.mu.Lock()
		l.running++
		d.parked--
		d.mu.Unlock()
	}
}

// drain stops new work from being taken and returns a channel closed once
// no handler runs or waits.
func (d *dispatcher) drain() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.idle == nil {
		d.idle = make(chan struct{})
		d.signalIdle()
	}
	return d.idle
}

// signalIdle closes idle if draining and nothing runs. Called with d.mu held.
func (d *dispatcher) signalIdle() {
	busy := d.calls.running - d.calls.waiting + d.notes.running - d.notes.waiting
	if d.idle == nil || busy+d.parked > 0 {
		return
	}
	select {
	case <-d.idle:
	default:
		close(d.idle)
	}
}

// rejection is the error for a call submit did not take.
func (d *dispatcher) rejection() *Error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.idle != nil {
		return &Error{Code: CodeShuttingDown, Message: "Server shutting down"}
	}
	return &Error{Code: CodeOverloaded, Message: "Server overloaded"}
}

// done unregisters a finished call.
func (d *dispatcher) done(t *task) {
	if t.cancel == nil {
		return
	}
	t.cancel()
	d.mu.Lock()
	if a, ok := d.active[t.msg.req.ID]; ok && a.ctx == t.ctx {
		delete(d.active, t.msg.req.ID)
	}
	d.mu.Unlock()
}

// cancel cancels the ctx of the inbound call named by cancel params.
func (d *dispatcher) cancel(params json.RawMessage) {
	id, ok := cancelID(params)
	if !ok {
		d.p.log.Warn("jsonrpc: malformed cancel notification", "params", string(params))
		return
	}
	d.mu.Lock()
	t, ok := d.active[id]
	d.mu.Unlock()
	if ok {
		t.cancel()
	}
}

// close drops queued work once the connection has ended.
func (d *dispatcher) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	d.calls.q, d.notes.q, d.queued = nil, nil, 0
}

// runJob serves a job and writes its reply, if it has one.
func (p *Peer) runJob(j job) {
	if !j.batch {
		if reply := p.serve(&j.tasks[0]); reply != nil {
			_ = p.write(p.ctx, reply)
		}
		return
	}
	replies := make([][]byte, len(j.tasks))
	var g errgroup.Group
	g.SetLimit(p.opts.BatchConcurrency)
	for i := range j.tasks {
		g.Go(func() error {
			replies[i] = p.serve(&j.tasks[i])
			return nil
		})
	}
	_ = g.Wait()
	out := []byte{'['}
	for _, r := range replies {
		if r != nil {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, r...)
		}
	}
	if len(out) > 1 { // an all-notification batch gets no reply at all
		_ = p.write(p.ctx, append(out, ']'))
	}
}

// serve runs one task's handler and returns its encoded reply, or nil for a
// notification.
func (p *Peer) serve(t *task) []byte {
	defer p.inbound.done(t)
	req := &t.msg.req
	if t.msg.invalid != nil {
		return appendErrorResponse(nil, req.ID, t.msg.invalid)
	}
	var result any
	var err error
	if t.ctx.Err() != nil {
		err = t.ctx.Err() // cancelled while queued: don't start it
	} else {
		result, err = p.callHandler(t.ctx, req)
	}
	if req.IsNotification() {
		if err != nil {
			p.log.Debug("jsonrpc: notification handler failed", "method", req.Method, "err", err)
		}
		return nil
	}
	if err == nil {
		raw, merr := marshalResult(result)
		if merr == nil {
			return appendResult(nil, req.ID, raw)
		}
		p.log.Error("jsonrpc: cannot marshal a result", "method", req.Method, "err", merr)
		err = errInternal()
	}
	e := p.opts.MapError(err)
	if e == nil {
		e = errInternal()
	}
	return appendErrorResponse(nil, req.ID, e)
}

// callHandler runs the user's handler through the interceptors, turning a
// panic into an internal error whose details go to the logger only.
func (p *Peer) callHandler(ctx context.Context, req *Request) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("jsonrpc: handler panicked", "method", req.Method, "panic", r, "stack", string(debug.Stack()))
			result, err = nil, errInternal()
		}
	}()
	if len(p.opts.Interceptors) == 0 {
		return p.handler.ServeRPC(ctx, req)
	}
	info := &CallInfo{Peer: p, Method: req.Method, ID: req.ID, Params: req.Params}
	return p.intercept(info, func(ctx context.Context) (any, error) {
		req.Params = info.Params // an interceptor may have rewritten them
		return p.handler.ServeRPC(ctx, req)
	})(ctx)
}
