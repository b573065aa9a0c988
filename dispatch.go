package jsonrpc

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"
)

// dispatcher runs inbound requests on handler goroutines. Work goes into one
// of two lanes, calls and notifications, each a FIFO served by runners:
// goroutines started on demand that exit when their lane is empty, so an
// idle Peer holds no goroutine but its read loop.
//
// Work waiting or running is bounded in bytes (Options.MaxQueuedBytes),
// and queued calls also in number (Options.MaxQueued); see submit and full.
//
// The calls lane has Options.MaxConcurrent slots, and a handler runs only
// while it holds one (slots.go): a runner holds one, an element of an
// inbound batch takes one of its own, and a handler waiting for a reply
// gives its slot back until the reply comes. So MaxConcurrent bounds the
// call handlers running at once, batches included.
type dispatcher struct {
	p      *Peer
	mu     sync.Mutex
	calls  lane
	notes  lane
	queued int // jobs waiting in either lane
	bytes  int // bytes of the messages of jobs queued or running
	active int // jobs taken by a runner and not yet done
	parked int // handlers waiting for a reply, slot given back (see park)
	closed bool

	// pushBack is the time, in nanoseconds, the read loop has spent in
	// waitForChange (Stats.PushBack).
	pushBack atomic.Int64

	// replyBytes are the bytes of handlers' replies waiting for room in
	// the outbound queue (see sendQueue.sendReply): counted, not budgeted.
	replyBytes int

	// Shutdown: idle is non-nil while draining, and closed when no job is
	// queued or active but those of the handlers that called Shutdown
	// (exempt).
	idle   chan struct{}
	exempt int

	// changed is closed (and replaced) whenever a job finishes or a
	// handler parks: what the read loop waits for when it pushes back.
	changed chan struct{}

	// Handlers waiting for a calls-lane slot, served in order: those
	// taking their slot back after a reply first, then batch elements.
	urgent, elems []chan struct{}

	// While notifications are ordered, a call does not start before the
	// notifications that arrived ahead of it have been handled (LSP: a
	// hover after a didChange sees the change), unless one of them waits
	// for a reply of its own, which the remote side might need that very
	// call to give.
	notesIn   uint64             // notifications taken into the ordered lane
	notesDone uint64             // of which handled
	notesHeld int                // notes-lane handlers waiting in Call or Batch
	byID      map[ID]*handlerCtx // inbound calls queued or running, for cancellation
}

// lane is a FIFO of jobs. A runner that finds the lane empty lingers for a
// moment before it exits, so that a steady stream of requests reuses one
// goroutine (whose stack has already grown to what the handlers need)
// instead of starting a new one per request.
type lane struct {
	q       []job
	running int           // slots held: runners (lingering ones too), batch elements, unparked handlers
	waiting int           // runners lingering for work
	wake    chan struct{} // wakes lingering runners; made by the first to linger, dropped when the last runner exits; never closed
	max     int
}

// linger is how long a runner waits for more work before it exits.
const linger = 2 * time.Millisecond

// job is one inbound message's work: a single request, or a batch's
// elements (which may include invalid ones that just get their error).
type job struct {
	tasks []task
	batch bool
	size  int    // bytes of the message, held until the job is done
	after uint64 // a call waits until notesDone reaches it
	read  uint64 // the ordinal of the message's Read (see Router)
}

// oneTask holds the task of a job of one message and its handler ctx, so
// that they take one allocation.
type oneTask struct {
	task [1]task
	ctx  [1]handlerCtx
}

// task is one request and the ctx its handler gets (nil for an invalid
// one, which only gets its error).
type task struct {
	msg message
	ctx *handlerCtx
}

// handlerCtx is the ctx a handler gets. It names its dispatcher and lane,
// so that Call and Batch can park it (see park), and counts the calls it
// has parked for.
type handlerCtx struct {
	context.Context      // the Peer's
	call            bool // a call's, cancellable (callctx.go); false for a notification's
	req             *Request
	d               *dispatcher
	l               *lane
	parks           int    // under d.mu
	read            uint64 // the ordinal of the request's Read (see Router)

	cmu       sync.Mutex
	cctx      context.Context    // a call's cancellable ctx, once made; under cmu
	ccancel   context.CancelFunc // cctx's; under cmu
	cancelled bool               // cancel was called; under cmu

	remoteCancelled atomic.Bool // the remote side sent the dialect's cancel for it

	after   []func() // AfterReply's, run once the reply has left; under cmu
	replied bool     // they have run; under cmu
}

// handlerKey finds the handlerCtx in a ctx derived from one.
type handlerKey struct{}

func (d *dispatcher) init(p *Peer) {
	d.p = p
	d.calls.max = p.opts.MaxConcurrent
	d.notes.max = 1
	if p.opts.ConcurrentNotifications {
		d.notes.max = p.opts.MaxConcurrent
	}
}

// handlerOf returns the handler of this dispatcher whose ctx ctx is or
// derives from, or nil.
func (d *dispatcher) handlerOf(ctx context.Context) *handlerCtx {
	h, _ := ctx.Value(handlerKey{}).(*handlerCtx)
	if h == nil || h.d != d {
		return nil
	}
	return h
}

// submit queues msgs, size bytes in all, as one job, within the limits
// times slack (1, or 2 for a notification taken while the read loop may not
// push back). It reports false, taking nothing, when they are reached. A
// message larger than MaxQueuedBytes is taken when nothing else is held.
func (d *dispatcher) submit(msgs []message, batch bool, size, slack int) bool {
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
	if d.full(l, size, slack) {
		return false
	}
	j := job{batch: batch, size: size, read: d.p.reads}
	var ctxs []handlerCtx
	if len(msgs) == 1 {
		one := new(oneTask) // a single message's task and ctx in one allocation
		j.tasks, ctxs = one.task[:], one.ctx[:]
	} else {
		j.tasks = make([]task, len(msgs))
		ctxs = make([]handlerCtx, len(msgs)) // one allocation for a batch's
	}
	for i, m := range msgs {
		j.tasks[i] = d.newTask(m, l, &ctxs[i])
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
	d.bytes += size
	d.kick(l)
	return true
}

// full reports whether l can take no more work of size bytes: the bytes
// held for both lanes are bounded by MaxQueuedBytes, and the calls lane's
// queue, with the handlers parked, by MaxQueued. Called with d.mu held.
func (d *dispatcher) full(l *lane, size, slack int) bool {
	if d.bytes > 0 && d.bytes+size > d.p.opts.MaxQueuedBytes*slack {
		return true
	}
	if l == &d.notes {
		return false
	}
	maxMsgs := d.p.opts.MaxQueued * slack
	return l.running >= l.max && len(l.q) >= maxMsgs || len(l.q)+d.parked >= maxMsgs
}

// charge counts n bytes of a batch's replies against the inbound budget,
// and reports whether the budget still has room.
func (d *dispatcher) charge(n int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return true
	}
	d.bytes += n
	return d.bytes < d.p.opts.MaxQueuedBytes
}

// countReply counts n bytes of a handler's reply waiting for room in the
// outbound queue (n < 0: no longer waiting).
func (d *dispatcher) countReply(n int) {
	d.mu.Lock()
	d.replyBytes += n
	d.mu.Unlock()
}

// uncharge gives back what charge counted, once the batch's reply is
// queued for writing.
func (d *dispatcher) uncharge(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return // close has reset the count
	}
	d.bytes -= n
	d.signalChange()
}

// waitForChange waits until a job finishes or a handler parks, or for at
// most max. The read loop calls it while it pushes back. It reports false
// when the Conn says its remote side has gone (see Watcher).
func (d *dispatcher) waitForChange(max time.Duration) bool {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return true
	}
	if d.changed == nil {
		d.changed = make(chan struct{})
	}
	ch := d.changed
	d.mu.Unlock()
	start := time.Now()
	defer func() { d.pushBack.Add(int64(time.Since(start))) }()
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-d.p.done:
	case <-d.p.gone:
		return false
	}
	return true
}

// signalChange wakes the read loop if it waits. Called with d.mu held.
func (d *dispatcher) signalChange() {
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
}

// draining reports whether Shutdown has begun.
func (d *dispatcher) draining() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.idle != nil || d.closed
}

// kick sees to it that a job just queued in l will be run: by a lingering
// runner if there are at least as many of them as queued jobs, else by a
// new runner if l has a free slot (and no handler waits for one), else by
// the next runner to finish. Called with d.mu held, by the read loop or by
// a handler or runner of the Peer's, which hold a count on the Peer's
// WaitGroup, so runners may be added to it.
func (d *dispatcher) kick(l *lane) {
	if len(l.q) <= l.waiting {
		select {
		case l.wake <- struct{}{}:
			return
		default: // wake-ups pending already: enough, unless the buffer is short
			if len(l.wake) >= len(l.q) {
				return
			}
		}
	}
	if l.running < l.max && !d.slotWanted(l) {
		l.running++
		d.p.wg.Add(1)
		go d.run(l, d.pop(l))
	}
}

// maxWake bounds a lane's buffer of wake-ups (a lane with no limit on its
// runners would otherwise get a huge one).
const maxWake = 1024

// orderedNotes reports whether notifications run one at a time in order.
func (d *dispatcher) orderedNotes() bool { return d.notes.max == 1 }

// newTask gives a request its handler ctx, h; a call's ctx is cancellable
// and registered by id, so that a cancel notification can reach it. Called
// with d.mu held.
func (d *dispatcher) newTask(m message, l *lane, h *handlerCtx) task {
	t := task{msg: m}
	if m.invalid != nil {
		return t
	}
	*h = handlerCtx{Context: d.p.ctx, d: d, l: l, read: d.p.reads}
	t.ctx = h
	if m.req.IsNotification() {
		return t
	}
	t.ctx.call = true
	if d.byID == nil {
		d.byID = make(map[ID]*handlerCtx)
	}
	if _, dup := d.byID[m.req.ID]; !dup {
		d.byID[m.req.ID] = t.ctx
	}
	return t
}

// run serves j, then whatever is queued in l, and exits once l has stayed
// empty for the linger time, or a handler waits for its slot.
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
		d.finished(l, j)
		for len(l.q) == 0 && !d.closed && !d.slotWanted(l) {
			if timer == nil {
				timer = time.NewTimer(linger)
			} else {
				timer.Reset(linger)
			}
			if l.wake == nil {
				l.wake = make(chan struct{}, min(l.max, maxWake))
			}
			wake := l.wake
			l.waiting++
			d.mu.Unlock()
			expired := false
			select {
			case <-wake:
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
		if len(l.q) == 0 || d.closed || d.slotWanted(l) || l.running > l.max {
			// (Over max: a handler took its slot back on credit; see
			// unpark. This one goes, and the lane gets back under.)
			d.releaseSlot(l)
			if l.waiting == 0 {
				// Nobody lingers: the channel and any stale wake-up in
				// it go; the next runner to linger makes another, so an
				// idle Peer keeps none (TestIdlePeerHeapAfterOneCall).
				l.wake = nil
			}
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
	if len(l.q) == 1 && cap(l.q) <= reuseQueue {
		l.q = l.q[:0] // the queue's array serves the next job
	} else {
		l.q = l.q[1:]
	}
	d.queued--
	d.active++
	return j
}

// reuseQueue is the largest capacity of a queue (a lane's, the send
// queue's) kept once it empties: one message at a time then appends into
// the same array, while a burst's array is let go.
const reuseQueue = 64

// finished accounts for a job done. Called with d.mu held.
func (d *dispatcher) finished(l *lane, j job) {
	d.active--
	if !d.closed {
		d.bytes -= j.size
	}
	if l == &d.notes && d.orderedNotes() {
		d.notesDone++
	}
	d.signalChange()
	d.signalIdle()
}

// awaitNotes waits until the ordered notifications up to after have been
// handled, or one of them waits for a reply, or the connection has ended.
func (d *dispatcher) awaitNotes(after uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.notesDone < after && d.notesHeld == 0 && !d.closed {
		if d.changed == nil {
			d.changed = make(chan struct{})
		}
		ch := d.changed
		d.mu.Unlock()
		select {
		case <-ch:
		case <-d.p.done:
		}
		d.mu.Lock()
	}
}

// drain stops new work from being taken and returns a channel closed once
// no job is queued or running. A handler that drains from inside (Shutdown
// from a handler) is exempt: its own job is not waited for.
func (d *dispatcher) drain(exempt bool) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if exempt {
		d.exempt++
	}
	if d.idle == nil {
		d.idle = make(chan struct{})
	}
	d.signalIdle()
	return d.idle
}

// signalIdle closes idle if draining and nothing is left. Called with d.mu
// held.
func (d *dispatcher) signalIdle() {
	if d.idle == nil || d.queued > 0 || d.active-d.exempt > 0 {
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
	// The data says which bound, so that whoever reads the refusal (an
	// editor's log after a 10 MB didOpen) knows what to raise: a newcomer's
	// LSP server met it with nothing to go on.
	return &Error{Code: CodeOverloaded, Message: "Server overloaded", Data: overloadedData}
}

// overloadedData is the data of a call refused for want of inbound room.
var overloadedData = []byte(`"inbound queue full (the receiver's MaxQueuedBytes or MaxQueued): try again later"`)

// done unregisters a finished call.
func (d *dispatcher) done(t *task) {
	if t.ctx == nil || !t.ctx.call {
		return
	}
	t.ctx.cancel()
	d.mu.Lock()
	if a, ok := d.byID[t.msg.req.ID]; ok && a == t.ctx {
		delete(d.byID, t.msg.req.ID)
	}
	d.mu.Unlock()
}

// cancel cancels the ctx of the inbound call named by cancel params.
func (d *dispatcher) cancel(params json.RawMessage) {
	id, ok := d.p.opts.Cancel.ID(params)
	if !ok {
		d.p.log.Info("jsonrpc: malformed cancel notification", "params", string(params))
		return
	}
	d.mu.Lock()
	h := d.byID[id]
	if h != nil {
		h.remoteCancelled.Store(true)
	}
	d.mu.Unlock()
	if h != nil {
		h.cancel()
	}
}

// close drops queued work once the connection has ended.
func (d *dispatcher) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	d.calls.q, d.notes.q, d.queued, d.bytes = nil, nil, 0, 0
	d.signalChange()
	for _, w := range append(d.urgent, d.elems...) {
		d.calls.running++ // the waiter goes on, and gives it back
		close(w)
	}
	d.urgent, d.elems = nil, nil
}
