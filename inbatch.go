package jsonrpc

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// Inbound batches. The runner that took a batch serves its elements itself,
// one after the other, in the slot it holds: most handlers are quick, and a
// goroutine per element would cost more than the handler (a new goroutine
// also grows its stack anew for the JSON decoder). Handlers that block get
// company: every batchTick during which no element finished, while elements
// are still waiting to start, one more helper goroutine joins, up to
// Options.BatchConcurrency in all (the runner counts as one), bounded by an
// errgroup. A helper takes a MaxConcurrent slot of its own before it takes
// an element, so the batch runs no more handlers than MaxConcurrent allows.
//
// What waits on what: an element that waits for a later element of its own
// batch (which has not started) is not a cycle, since the ticker that adds
// helpers waits on nothing but the batch's own mutex, held only briefly; a
// helper waits for a slot exactly as any batch element did before (see
// slots.go); and the runner, once it has no element left to start, gives
// its slot back before it waits for its helpers (one of them may need a
// slot back after a reply), and takes one back after. So the elements of a
// batch start no later than they would with a goroutine each, give or take
// a tick per helper.

// The replies of a batch count against the inbound budget
// (Options.MaxQueuedBytes) from the moment each element's is made until the
// batch's reply array is queued for writing: the batch is inbound work
// still being served. An element that would start once the budget is full
// is not run, and gets a CodeOverloaded error in the array, as a call
// refused for want of room does; the first element always runs. So the
// replies held by all the batches being served stay within the budget,
// give or take the elements running when it fills, and no batch's reply
// array outgrows it. Nothing waits for that room: an element only looks.

// batchTick is how long the elements of an inbound batch may go without
// one of them finishing before another helper joins.
const batchTick = 100 * time.Microsecond

// inBatch is one inbound batch being served.
type inBatch struct {
	p       *Peer
	tasks   []task
	replies []*msgBuf

	next     atomic.Int32 // index of the next element to start
	finished atomic.Int32 // elements done
	charged  atomic.Int64 // bytes of replies counted against the inbound budget
	full     atomic.Bool  // the inbound budget was full at the last charge

	mu      sync.Mutex
	g       errgroup.Group // the helpers
	helpers int            // started, under mu
	seen    int32          // finished at the last tick, under mu
	stopped bool           // no more helpers: the batch is being collected
	ticker  *time.Timer
}

// runBatch serves the elements of an inbound batch and returns the reply
// arrays (one, unless it is longer than the Conn carries; none when every
// element was a notification), and the bytes it counted against the
// inbound budget, which the caller gives back once the replies are queued.
func (p *Peer) runBatch(j job) ([]*msgBuf, int) {
	b := &inBatch{p: p, tasks: j.tasks, replies: make([]*msgBuf, len(j.tasks))}
	if len(j.tasks) > 1 && p.opts.BatchConcurrency > 1 {
		b.g.SetLimit(p.opts.BatchConcurrency - 1)
		b.mu.Lock() // tick may run before AfterFunc returns
		b.ticker = time.AfterFunc(batchTick, b.tick)
		b.mu.Unlock()
	}
	b.work() // in the runner's slot
	if b.ticker != nil {
		b.mu.Lock()
		b.stopped = true
		b.ticker.Stop()
		helpers := b.helpers
		b.mu.Unlock()
		if helpers > 0 {
			// Not in its slot while it waits: a helper whose handler
			// waits for a reply needs one back to finish.
			d := &p.inbound
			d.release()
			_ = b.g.Wait()
			d.acquire(true)
		}
	}
	return b.collect(), int(b.charged.Load())
}

// work serves elements until none is left to start.
func (b *inBatch) work() {
	for {
		i := int(b.next.Add(1)) - 1
		if i >= len(b.tasks) {
			return
		}
		b.element(i)
	}
}

// element serves element i, or refuses it when the batch's replies have
// filled the inbound budget, and counts its reply against the budget.
func (b *inBatch) element(i int) {
	t := &b.tasks[i]
	var r *msgBuf
	if b.full.Load() && t.msg.invalid == nil {
		b.p.inbound.done(t)
		r = errorReply(t.msg.req.ID, errBatchOverBudget())
	} else {
		r = b.p.serve(t)
		t.ctx.replyLeft() // counted with the batch's replies from here
	}
	b.replies[i] = r
	if r != nil {
		b.charged.Add(int64(len(r.b)))
		if !b.p.inbound.charge(len(r.b)) {
			b.full.Store(true)
		}
	}
	b.finished.Add(1)
}

// errBatchOverBudget is the error of a batch element not run because the
// replies of the batches being served filled the inbound budget.
func errBatchOverBudget() *Error {
	return &Error{Code: CodeOverloaded, Message: "Server overloaded", Data: []byte(`"batch replies over the inbound budget"`)}
}

// help is a helper's work: in a slot of its own, taken before it takes an
// element, so that an element never waits for a slot once taken.
func (b *inBatch) help() error {
	d := &b.p.inbound
	for int(b.next.Load()) < len(b.tasks) {
		d.acquire(false)
		i := int(b.next.Add(1)) - 1
		if i >= len(b.tasks) {
			d.release()
			return nil
		}
		b.element(i)
		d.release()
	}
	return nil
}

// tick adds a helper if no element finished since the last tick while some
// are still to start, and ticks again while any is.
func (b *inBatch) tick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || int(b.next.Load()) >= len(b.tasks) {
		return
	}
	if f := b.finished.Load(); f != b.seen {
		b.seen = f
	} else if b.g.TryGo(b.help) { // false: BatchConcurrency reached
		b.helpers++
	}
	b.ticker.Reset(batchTick)
}

// collect joins the replies in the order of the elements into reply
// arrays (one unless that is too long: see replyArrays), and gives the
// elements' buffers back.
func (b *inBatch) collect() []*msgBuf {
	elems := make([][]byte, len(b.replies))
	var ids []ID // only for replies too long, which are rare
	for i, r := range b.replies {
		if r != nil {
			elems[i] = r.b
		}
	}
	if b.p.maxMsg > 0 {
		ids = make([]ID, len(b.replies))
		for i := range ids {
			ids[i] = b.tasks[i].msg.req.ID
		}
	}
	out := b.p.replyArrays(elems, ids)
	for _, r := range b.replies {
		if r != nil {
			r.free()
		}
	}
	return out
}
