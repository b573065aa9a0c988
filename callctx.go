package jsonrpc

import "context"

// A call's handler ctx is cancellable: by a cancel notification naming it,
// and once its handler has returned. Most handlers never look at their
// ctx's Done channel, so the cancellable context (two allocations:
// context.WithCancel's ctx and its CancelFunc) is made only when something
// needs it: Done, or the Value lookup by which context.WithCancel,
// context.AfterFunc and context.Cause find the cancelCtx to hang on (the
// context package's key is a *int; any other key is answered by the
// Peer's ctx, so that an interceptor or a logger looking up a span or a
// user's value costs nothing). Until then a cancellation is a flag that
// Err reports. TestCallCtxCancelledLazily and TestCallCtxValueStaysLazy
// pin the behaviour.

// Done returns the ctx's Done channel; for a call, that of its
// cancellable ctx, made now if need be.
func (h *handlerCtx) Done() <-chan struct{} {
	if !h.call {
		return h.Context.Done()
	}
	return h.cancellable().Done()
}

// Err reports why the ctx ended, as context.WithCancel's would.
func (h *handlerCtx) Err() error {
	if !h.call {
		return h.Context.Err()
	}
	h.cmu.Lock()
	c, cancelled := h.cctx, h.cancelled
	h.cmu.Unlock()
	if c != nil {
		return c.Err()
	}
	if err := h.Context.Err(); err != nil {
		return err
	}
	if cancelled {
		return context.Canceled
	}
	return nil
}

func (h *handlerCtx) Value(key any) any {
	switch key.(type) {
	case handlerKey:
		return h
	case peerKey:
		return h.Context.Value(key)
	}
	if _, internal := key.(*int); h.call && internal {
		return h.cancellable().Value(key)
	}
	return h.Context.Value(key)
}

// cancellable returns the call's cancellable ctx, making it (cancelled
// already if the call was) on first use.
func (h *handlerCtx) cancellable() context.Context {
	h.cmu.Lock()
	defer h.cmu.Unlock()
	if h.cctx == nil {
		h.cctx, h.ccancel = context.WithCancel(h.Context)
		if h.cancelled {
			h.ccancel()
		}
	}
	return h.cctx
}

// cancel cancels a call's ctx; a no-op for a notification's.
func (h *handlerCtx) cancel() {
	if !h.call {
		return
	}
	h.cmu.Lock()
	h.cancelled = true
	c := h.ccancel
	h.cmu.Unlock()
	if c != nil {
		c()
	}
}
