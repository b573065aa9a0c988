package jsonrpc

import (
	"context"
	"slices"
)

// Slots of the calls lane. A goroutine runs a call handler only while it
// holds one of the lane's MaxConcurrent slots:
//
//   - a runner holds one while it runs its jobs (and while it lingers);
//   - a runner serving an inbound batch gives its slot back, and each
//     element takes one of its own to run, then takes one back to go on;
//   - a handler waiting for a reply (park) gives its slot back, and takes
//     one back when its last outstanding call has its outcome.
//
// A freed slot is handed straight to a handler waiting for one, those
// taking it back after a reply first, then batch elements; only when none
// waits does it go to a queued job. So the lane never runs more than
// MaxConcurrent handlers, and a handler that got its reply is not starved
// by newer work.
//
// What waits on what: a handler waiting for a slot waits for a slot holder
// to finish its handler, give its slot back, or (a lingering runner, woken
// for this) exit. Slot holders wait only in user code; the read loop never
// waits for a slot. So no wait for a slot is part of a cycle the library
// makes.

// slotWanted reports whether a handler waits for a slot of l. Called with
// d.mu held.
func (d *dispatcher) slotWanted(l *lane) bool {
	return l == &d.calls && len(d.urgent)+len(d.elems) > 0
}

// releaseSlot gives a slot of l back: to the first handler waiting for one,
// else to the lane, where a queued job may start on it. Called with d.mu
// held.
func (d *dispatcher) releaseSlot(l *lane) {
	if l == &d.calls && !d.closed && l.running <= l.max { // over: credit to repay
		var w chan struct{}
		switch {
		case len(d.urgent) > 0:
			w, d.urgent = d.urgent[0], d.urgent[1:]
		case len(d.elems) > 0:
			w, d.elems = d.elems[0], d.elems[1:]
		}
		if w != nil {
			close(w) // handed over: running is unchanged
			return
		}
	}
	l.running--
	if len(l.q) > 0 && !d.closed {
		d.kick(l)
	}
}

// acquire waits for a slot of the calls lane. urgent puts the caller ahead
// of batch elements. Once the connection has ended it takes one at once.
func (d *dispatcher) acquire(urgent bool) { d.acquireBy(nil, urgent) }

// acquireBy is acquire, but when done (if not nil) is closed first it
// takes the slot on credit: the lane counts it at once, over MaxConcurrent
// if need be, and starts no queued job until it is back under (see
// unpark).
func (d *dispatcher) acquireBy(done <-chan struct{}, urgent bool) {
	l := &d.calls
	d.mu.Lock()
	if d.closed || l.running < l.max && !d.slotWanted(l) {
		l.running++
		d.mu.Unlock()
		return
	}
	w := make(chan struct{})
	if urgent {
		d.urgent = append(d.urgent, w)
	} else {
		d.elems = append(d.elems, w)
	}
	if l.waiting > 0 { // a lingering runner: it exits and hands its slot over
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	d.mu.Unlock()
	select {
	case <-w: // closed by releaseSlot, or by close (which counts the slot)
	case <-done:
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.withdrawWaiter(w) {
			l.running++ // on credit
		}
	}
}

// withdrawWaiter takes w out of the queues of handlers waiting for a slot.
// It reports false if w was no longer there: the slot was handed over.
// Called with d.mu held.
func (d *dispatcher) withdrawWaiter(w chan struct{}) bool {
	for _, q := range []*[]chan struct{}{&d.urgent, &d.elems} {
		if i := slices.Index(*q, w); i >= 0 {
			*q = slices.Delete(*q, i, i+1)
			return true
		}
	}
	return false
}

// release gives back a slot taken with acquire.
func (d *dispatcher) release() {
	d.mu.Lock()
	d.releaseSlot(&d.calls)
	d.mu.Unlock()
}

// park is called by Call and Batch before they wait for a reply (or for
// room to send their request). If ctx is that of a calls-lane handler of
// this dispatcher, the handler gives its slot back, once however many calls
// it makes at a time, and a queued job or a waiting handler may run in its
// place; the returned func takes a slot back when its last call is done.
// If ctx is that of an ordered notification, the calls that wait for it may
// start meanwhile.
func (d *dispatcher) park(ctx context.Context) (unpark func()) {
	h := d.handlerOf(ctx)
	if h == nil || ctx.Err() != nil {
		return func() {}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	h.parks++
	if h.parks == 1 {
		switch {
		case h.l == &d.calls:
			d.parked++
			d.releaseSlot(h.l)
		case d.orderedNotes():
			// An ordered notification keeps its place (the next one
			// must not start), but the calls it holds back may run.
			d.notesHeld++
		}
		d.signalChange()
	}
	return func() { d.unpark(ctx, h) }
}

// unpark ends one park of h's, made for a Call or Batch with ctx. The
// handler takes its slot back before it goes on, so that MaxConcurrent
// holds; but ctx bounds the Call, so when it ends while every slot is
// taken, the handler goes on at once with its slot taken on credit: it
// counts against MaxConcurrent again from then, over it if need be, and no
// queued job starts until enough handlers have finished to bring the lane
// back under it. (Waiting for the slot past ctx's end would break the
// promise that ctx bounds the Call; this breaks MaxConcurrent only for
// handlers already running, never by starting one.)
func (d *dispatcher) unpark(ctx context.Context, h *handlerCtx) {
	d.mu.Lock()
	h.parks--
	if h.parks > 0 || h.l != &d.calls {
		if h.parks == 0 && d.orderedNotes() {
			d.notesHeld--
		}
		d.mu.Unlock()
		return
	}
	d.parked--
	d.mu.Unlock()
	d.acquireBy(ctx.Done(), true)
}
