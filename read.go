package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// readLoop reads messages until the connection ends. It routes replies to
// the pending table, answers malformed input, and hands requests to the
// dispatcher. It never runs user code and never waits for a write; it waits
// for handlers only to make room for a notification, and only while that
// cannot close a cycle through the remote side (see mayPushBack).
func (p *Peer) readLoop() {
	defer p.wg.Done()
	defer close(p.readDone)
	defer func() {
		p.mu.Lock()
		p.readStopped = true
		p.mu.Unlock()
	}()
	for {
		data, err := p.conn.Read()
		if err == nil || errors.Is(err, ErrMessageTooLarge) {
			p.reads++ // the ordinal of this message (see Router)
		}
		if err != nil {
			if errors.Is(err, ErrMessageTooLarge) && p.ctx.Err() == nil {
				p.log.Info("jsonrpc: incoming message too large", "err", err)
				e := errInvalidRequest()
				e.Data = appendQuote(nil, "message too large")
				p.replyNow(appendErrorResponse(nil, NullID(), e))
				continue
			}
			if errors.Is(err, io.EOF) {
				p.drain(err)
				return
			}
			p.end(err) // the transport says what failed; "read failed" misled when it was a POST
			return
		}
		p.route(data)
	}
}

// drain ends the Peer after the remote side ended its stream cleanly, once
// the inbound work already read has been served (see Options.DrainTimeout,
// counted from when the end was first seen: see remoteEnded).
func (p *Peer) drain(eof error) {
	p.remoteEnded(eof)
	if p.opts.DrainTimeout > 0 {
		ctx, cancel := context.WithDeadline(context.Background(), p.drainBy)
		defer cancel()
		select {
		case <-p.inbound.drain(false):
			// The replies are queued; write them (the remote side may
			// have closed only its sending half, as a pipe's reader does).
			if p.out.flush(ctx) != nil {
				p.log.Info("jsonrpc: replies still unwritten after the remote ended; dropping them", "after", p.opts.DrainTimeout)
			}
		case <-p.done:
		case <-ctx.Done():
			p.log.Info("jsonrpc: handlers still running after the remote ended; cancelling them", "after", p.opts.DrainTimeout)
		}
	}
	p.mu.Lock()
	eof = p.eof // the first end seen
	p.mu.Unlock()
	p.end(eof)
}

// endAfterDrain ends the Peer once DrainTimeout has passed since the
// remote side ended cleanly, if nothing has ended it before: the read
// loop's own deadline (see drain) holds only once its Read sees the end.
func (p *Peer) endAfterDrain() {
	t := time.AfterFunc(time.Until(p.drainBy), func() {
		p.mu.Lock()
		eof := p.eof
		p.mu.Unlock()
		if p.endErr.Load() == nil {
			p.log.Info("jsonrpc: still serving DrainTimeout after the remote ended; ending", "after", p.opts.DrainTimeout)
		}
		p.end(eof)
	})
	p.mu.Lock()
	p.drainTimer = t
	ended := p.ended
	p.mu.Unlock()
	if ended {
		t.Stop()
	}
}

// remoteEnded records, the first time only, that the remote side ended its
// stream cleanly: a Read returned io.EOF, or, while the read loop pushed
// back, the Conn's Gone said so (see admitNotes). Nothing more will come,
// so the Peer's own pending calls fail at once, and the DrainTimeout in
// which it serves what it has read starts. Called by the read loop only.
func (p *Peer) remoteEnded(eof error) {
	p.mu.Lock()
	if p.eof != nil {
		p.mu.Unlock()
		return
	}
	p.eof = eof
	close(p.eofSeen)
	p.mu.Unlock()
	p.drainBy = time.Now().Add(max(p.opts.DrainTimeout, 0))
	p.pending.close(closedBy(eof)) // nobody will answer them
}

// route handles one incoming message, element by element.
func (p *Peer) route(data []byte) {
	msgs, batch := p.decoder.decode(data)
	if batch && p.opts.MaxBatch > 0 && len(msgs) > p.opts.MaxBatch {
		e := errInvalidRequest()
		e.Data = appendQuote(nil, fmt.Sprintf("batch of %d exceeds the limit of %d", len(msgs), p.opts.MaxBatch))
		p.replyNow(appendErrorResponse(nil, NullID(), e))
		return
	}
	work := msgs[:0]
	var cancels []json.RawMessage
	for _, m := range msgs {
		switch {
		case m.resp != nil:
			p.receive(m)
		case m.invalid == nil && m.req.IsNotification() && p.opts.Cancel != nil && m.req.Method == p.opts.Cancel.Method:
			cancels = append(cancels, m.req.Params)
		case m.invalid == nil && m.req.IsNotification() && p.opts.Progress != nil &&
			m.req.Method == p.opts.Progress.Method && p.routeProgress(m.req.Params):
			// Routed to its call, as a reply is, or dropped.
		default:
			work = append(work, m)
		}
	}
	if len(work) > 0 {
		// Charged at the size of what is kept: the requests' params are
		// slices of data, which keeps its whole array alive.
		p.dispatch(work, batch, cap(data))
	}
	// After the work is taken, so that a cancel reaches a call in the
	// same batch as itself.
	for _, params := range cancels {
		p.inbound.cancel(params)
	}
}

// dispatch hands work (size bytes) to the dispatcher, or answers what it
// cannot take. A call or batch that does not fit is refused at once. A
// notification cannot be refused: see admitNotes. The notifications of a
// batch go with the notifications sent alone, in order, and its calls as
// one batch of their own, answered in one array.
func (p *Peer) dispatch(work []message, batch bool, size int) {
	if batch {
		p.dispatchBatch(work, size)
		return
	}
	if work[0].req.IsNotification() && work[0].invalid == nil {
		p.admitNotes(work, size+msgOverhead)
		return
	}
	if !p.inbound.submit(work, false, size+msgOverhead, 1) {
		p.overloaded(work, false)
	}
}

// dispatchBatch splits an inbound batch (size bytes) into its
// notifications, which run in the notifications lane in arrival order
// like those sent alone, and its calls and invalid elements, which run as
// one batch whose reply array holds their replies. The calls wait for the
// notifications, those of the batch included, as calls sent alone do.
//
// Each job is charged what it keeps alive. The elements' params are
// slices of the batch's message, so a job keeps the whole message (its
// other elements, and whatever else the message holds: space, responses)
// unless its params are copied out of it (detach). So the notifications
// of an all-notification batch are charged the whole message; a batch
// that is split copies the smaller part out, charged its own bytes, and
// the other part keeps the message and is charged all of it; and with
// Options.ConcurrentNotifications, where each notification is a job of
// its own, every notification is copied out.
func (p *Peer) dispatchBatch(work []message, size int) {
	notes, calls := work, work[:0:0]
	nNotes, notesSize := 0, 0
	for _, m := range work {
		if m.invalid == nil && m.req.IsNotification() {
			nNotes++
			notesSize += elemSize(m)
		}
	}
	concurrent := !p.inbound.orderedNotes()
	callsSize := size
	switch {
	case nNotes == 0:
		notes, calls = nil, work
	case nNotes == len(work):
		if concurrent {
			detach(notes)
		} else {
			notesSize = size // one job, which keeps the message
		}
	default:
		notes, calls = make([]message, 0, nNotes), make([]message, 0, len(work)-nNotes)
		for _, m := range work {
			if m.invalid == nil && m.req.IsNotification() {
				notes = append(notes, m)
			} else {
				calls = append(calls, m)
			}
		}
		if concurrent || notesSize <= size-notesSize {
			detach(notes) // the calls keep the message
		} else {
			callsSize = detach(calls) // the notifications keep it
			notesSize = size
		}
	}
	switch {
	case len(notes) == 0:
	case !concurrent: // one job, its notifications in turn
		p.admitNotes(notes, notesSize+msgOverhead*len(notes))
	default: // a job each, each its own bytes
		for i := range notes {
			p.admitNotes(notes[i:i+1], elemSize(notes[i])+msgOverhead)
		}
	}
	if len(calls) > 0 {
		if !p.inbound.submit(calls, true, callsSize+msgOverhead*len(calls), 1) {
			p.overloaded(calls, true)
		}
	}
}

// detach copies the params of msgs out of the message they were read in,
// so that they keep only their own bytes, and returns about how many
// those are (as elemSize counts them).
func detach(msgs []message) int {
	n := 0
	for i := range msgs {
		if msgs[i].req.Params != nil {
			msgs[i].req.Params = bytes.Clone(msgs[i].req.Params)
		}
		n += elemSize(msgs[i])
	}
	return n
}

// elemSize is about what a batch element took of its message's bytes.
func elemSize(m message) int {
	return len(m.req.Method) + len(m.req.Params) + len(m.req.ID.raw) + envelopeSize
}

// admitNotes queues notifications (one sent alone, or those of a batch, in
// order), size bytes, in the notifications lane. They cannot be refused:
// the read loop waits for room, pushing back on the sender through the
// transport, but only while nothing on this side waits on the remote side
// (awaitsRemote), since a handler it waits for could be waiting on that,
// and the remote side's read loop on us: a cycle. Otherwise they are taken
// beyond the budget, up to twice it, and past that the connection ends
// with ErrOverloaded. While it waits, the read loop also watches the Conn
// (Watcher), which may learn that the remote side has gone: then the
// connection ends. Nothing is dropped while it lives.
func (p *Peer) admitNotes(notes []message, size int) {
	d := &p.inbound
	for !d.submit(notes, false, size, 1) {
		if d.draining() {
			p.log.Debug("jsonrpc: shutting down, dropped notifications", "method", notes[0].req.Method, "count", len(notes))
			return
		}
		if p.awaitsRemote() {
			if !d.submit(notes, false, size, 2) {
				p.end(fmt.Errorf("%w: notifications over twice the budget of %d bytes while a reply or a write was awaited",
					ErrOverloaded, p.opts.MaxQueuedBytes))
			}
			return
		}
		wait := pushBackPoll
		if !p.drainBy.IsZero() { // the remote has ended: serve what was read, in time
			if wait = min(wait, time.Until(p.drainBy)); wait <= 0 {
				p.log.Info("jsonrpc: notifications still unserved after the remote ended; dropping them",
					"after", p.opts.DrainTimeout, "method", notes[0].req.Method, "count", len(notes))
				p.mu.Lock()
				eof := p.eof
				p.mu.Unlock()
				p.end(eof)
				return
			}
		}
		if !d.waitForChange(wait) {
			err := p.goneErr()
			if !errors.Is(err, io.EOF) || p.opts.DrainTimeout < 0 {
				p.end(fmt.Errorf("the remote side went while this side pushed back: %w", err))
				return
			}
			// A clean end (a Pipe closed, a child that exited with
			// status 0): what was read is served, as after io.EOF, and
			// the read loop reads on to the stream's end, all within
			// DrainTimeout, whether or not the stream ends (a process
			// the child started may hold its output open).
			p.remoteEnded(err)
			p.gone = nil
			p.endAfterDrain()
		}
	}
}

// msgOverhead is what an inbound request costs beyond its bytes (its job,
// task and handler ctx), charged against MaxQueuedBytes.
const msgOverhead = 256

// pushBackPoll is how often the read loop, while it pushes back, looks
// again at whether it may: a call made meanwhile by a goroutine that is not
// a handler does not wake it.
const pushBackPoll = 10 * time.Millisecond

// awaitsRemote reports whether anything on this side waits on the remote
// side: a call waiting for a reply (which only the read loop can deliver),
// or anyone waiting for room in the outbound queue or for a write (which a
// remote side that is pushing back too will not take). A handler the read
// loop waits for could be waiting for any of them.
func (p *Peer) awaitsRemote() bool {
	return p.pending.len() > 0 || p.out.blocked()
}

// receive delivers a reply to the call waiting for it, or logs why not.
func (p *Peer) receive(m message) {
	if m.resp.ID.IsZero() { // no usable id: nobody to tell
		p.log.Warn("jsonrpc: dropped a malformed response", "why", m.invalid.Message)
		return
	}
	if m.resp.ID.IsNull() && m.resp.Error != nil {
		// An error naming no call: the remote side could not read a
		// request of ours (a parse error, a message or batch too long).
		if p.pending.deliverUnattributed(m.resp, p.out.lastSeq()) > 0 {
			return
		}
		p.log.Warn("jsonrpc: dropped an error reply with id null: it may answer any of several messages of ours",
			"error", m.resp.Error)
		return
	}
	// A malformed reply to a pending call fails that call at once, with
	// what was received (response.invalid).
	switch p.pending.deliver(m.resp) {
	case replyLate: // the answer to a call whose caller left: expected
		p.log.Debug("jsonrpc: dropped a late reply to a call given up", "id", m.resp.ID.raw)
	case replyStray:
		p.log.Warn("jsonrpc: dropped a response nobody waits for", "id", m.resp.ID.raw)
	}
}

// overloaded answers work that the dispatcher did not take (its queue is
// full, or the Peer is shutting down): each call gets the rejection error,
// invalid elements their own error; notifications are dropped, since
// nothing can be answered to them. A batch's answers go in arrays within
// the Conn's limit, as its replies would (see replyArrays).
func (p *Peer) overloaded(work []message, batch bool) {
	elems := make([][]byte, len(work))
	ids := make([]ID, len(work))
	for i, m := range work {
		e := m.invalid
		if e == nil {
			if m.req.IsNotification() {
				continue // in a batch refused whole: nothing can be answered
			}
			e = p.inbound.rejection()
		}
		elems[i], ids[i] = appendErrorResponse(nil, m.req.ID, e), m.req.ID
		if !batch {
			p.replyNow(p.fits(elems[i], m.req.ID, e))
			return
		}
	}
	if !batch {
		return
	}
	for _, a := range p.replyArrays(elems, ids) {
		p.replyNow(bytes.Clone(a.b)) // charged its own size, not a pooled buffer's
		a.free()
	}
}

// replyNow queues a reply from the read loop (a refusal, or the answer to a
// message too large or a batch too long) without waiting: the read loop
// never waits to write, or two Peers whose read loops both waited to write
// their refusals to each other would both stop reading, for good. A remote
// side that leaves maxControlBytes of such replies unread, while it goes on
// sending, is ended (ErrSlowConsumer).
func (p *Peer) replyNow(msg []byte) {
	if !p.out.control(msg, p.reads) && p.endErr.Load() == nil {
		p.end(fmt.Errorf("%w: %d bytes of replies to refused messages unread", ErrSlowConsumer, maxControlBytes))
	}
}
