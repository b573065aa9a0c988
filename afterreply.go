package jsonrpc

import "context"

// AfterReply arranges for f to run once the reply of the call whose
// handler got ctx has left the handler's hands: queued for writing (from
// then on Options.MaxOutboundBytes counts it), written in place, or given
// up because the connection ended; for an element of an inbound batch,
// once the element is done (its reply then counts against
// Options.MaxQueuedBytes with the batch's). It is how a handler that
// budgets its own replies (topic.Hub counts the subscribe replies of a
// connection) learns that a reply no longer waits for room: a reply
// waiting for room is held by its handler's slot, not budgeted.
//
// AfterReply reports false, and f never runs, when ctx is not a call
// handler's (or one derived from it) or when that call's reply has already
// left. f runs on the handler's goroutine, after the reply; it must not
// block.
func AfterReply(ctx context.Context, f func()) bool {
	h, _ := ctx.Value(handlerKey{}).(*handlerCtx)
	if h == nil || !h.call {
		return false
	}
	h.cmu.Lock()
	defer h.cmu.Unlock()
	if h.replied {
		return false
	}
	h.after = append(h.after, f)
	return true
}

// replyLeft runs the functions AfterReply registered for h's call: its
// reply has been queued, written, or given up.
func (h *handlerCtx) replyLeft() {
	if h == nil || !h.call {
		return
	}
	h.cmu.Lock()
	h.replied = true
	after := h.after
	h.after = nil
	h.cmu.Unlock()
	for _, f := range after {
		f()
	}
}
