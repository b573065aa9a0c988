package jsonrpc

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"
)

// runJob serves a job and queues its reply, if it has one. The reply waits
// for room in the outbound queue: the handlers push back on their lane
// rather than hold replies beyond Options.MaxOutboundBytes.
func (p *Peer) runJob(j job) {
	var replies []*msgBuf
	charged := 0
	if j.batch {
		replies, charged = p.runBatch(j)
	} else {
		// One request, or the notifications of a batch, in order.
		var reply *msgBuf
		for i := range j.tasks {
			reply = p.serve(&j.tasks[i])
		}
		if reply != nil {
			if p.checkSize(len(reply.b)) != nil {
				reply = p.tooLargeReply(j.tasks[0].msg.req.ID, reply)
			}
			p.out.sendReply(reply, j.read)
		}
		for i := range j.tasks {
			j.tasks[i].ctx.replyLeft()
		}
	}
	for _, r := range replies {
		p.reply(r, j.read)
	}
	if charged > 0 {
		p.inbound.uncharge(charged)
	}
}

// tooLargeReply replaces a reply to id longer than the Conn carries with
// an Internal error, which the remote side can read.
func (p *Peer) tooLargeReply(id ID, reply *msgBuf) *msgBuf {
	p.log.Error("jsonrpc: a reply is longer than the connection carries; sending an Internal error instead",
		"bytes", len(reply.b), "limit", p.maxMsg)
	reply.free()
	out := newMsgBuf()
	out.b = p.tooLargeError(out.b, id, p.maxMsg)
	return out
}

// reply queues a batch's reply array to the message read (see Router),
// waiting for room until the connection ends (in which case there is
// nobody to answer).
func (p *Peer) reply(msg *msgBuf, read uint64) {
	_, _ = p.out.send(&outgoing{data: msg.b, buf: msg, read: read})
}

// serve runs one task's handler and returns its encoded reply, or nil for a
// notification.
func (p *Peer) serve(t *task) *msgBuf {
	defer p.inbound.done(t)
	req := &t.msg.req
	if t.msg.invalid != nil {
		return errorReply(req.ID, t.msg.invalid)
	}
	t.ctx.req = req // for RequestFromContext
	var result any
	var err error
	if t.ctx.Err() != nil {
		err = t.ctx.Err() // cancelled while queued: don't start it
	} else {
		result, err = p.callHandler(t.ctx, req)
	}
	if req.IsNotification() {
		if err != nil {
			p.log.DebugContext(t.ctx, "jsonrpc: notification handler failed", "method", req.Method, "err", err)
		}
		return nil
	}
	if c := p.opts.Cancel; c != nil && c.NoReply && t.ctx.remoteCancelled.Load() {
		return nil // the dialect wants no reply to a call its caller cancelled
	}
	if err == nil {
		reply, merr := encodeResult(req.ID, result)
		if merr == nil {
			return reply
		}
		p.log.ErrorContext(t.ctx, "jsonrpc: cannot marshal a result", "method", req.Method, "err", merr)
		err = errInternal()
	}
	e := p.opts.MapError(err)
	if e == nil {
		e = errInternal()
	}
	return errorReply(req.ID, e)
}

// errorReply encodes an error reply in a pooled buffer.
func errorReply(id ID, e *Error) *msgBuf {
	mb := newMsgBuf()
	mb.b = appendErrorResponse(mb.b, id, e)
	return mb
}

// callHandler runs the user's handler through the interceptors, turning a
// panic into an internal error whose details go to the logger only. The
// handler's panic is recovered inside the interceptors, so that they see
// the internal error (a span ends with it) and the record is logged with
// the ctx the handler got (a span's ids on it: the otel module's
// TestPanicLogCarriesSpan); an interceptor's own panic is recovered
// outside them.
func (p *Peer) callHandler(ctx context.Context, req *Request) (result any, err error) {
	defer p.recoverHandler(ctx, req.Method, &result, &err)
	if len(p.opts.Interceptors) == 0 {
		return p.handler.ServeRPC(ctx, req)
	}
	info := &CallInfo{Peer: p, Method: req.Method, ID: req.ID, Params: req.Params}
	return p.intercept(ctx, info, func(ctx context.Context) (result any, err error) {
		defer p.recoverHandler(ctx, req.Method, &result, &err)
		req.Params = info.Params // an interceptor may have rewritten them
		return p.handler.ServeRPC(ctx, req)
	})
}

// recoverHandler, deferred, turns a panic of what it defers into an
// internal error, logged with ctx.
func (p *Peer) recoverHandler(ctx context.Context, method string, result *any, err *error) {
	if r := recover(); r != nil {
		p.logPanic(ctx, method, r)
		*result, *err = nil, errInternal()
	}
}

// logPanic logs a handler's panic. To Options.Logger, every one; to the
// slog.Default fallback (no Logger set), at most one a second per Peer,
// with the count of those not logged since, so that a remote side whose
// calls make a handler panic cannot flood the process's log
// (TestReviewPanicLogIsBounded).
func (p *Peer) logPanic(ctx context.Context, method string, r any) {
	if !p.panicFallback {
		p.log.ErrorContext(ctx, "jsonrpc: handler panicked", "method", method, "panic", r, "stack", string(debug.Stack()))
		return
	}
	now := time.Now().UnixNano()
	last := p.panicLogged.Load()
	if now-last < int64(time.Second) || !p.panicLogged.CompareAndSwap(last, now) {
		p.panicsUnlogged.Add(1)
		return
	}
	slog.Default().ErrorContext(ctx, "jsonrpc: handler panicked", "method", method, "panic", r, "stack", string(debug.Stack()),
		"not_logged_before", p.panicsUnlogged.Swap(0))
}
