package httprpc

import (
	"context"

	"github.com/peerwire/jsonrpc"
)

// A session's calls, by request id: the stream awaiting each reply (so
// that a call cancelled in a dialect that answers none, MCP's, stops
// holding its stream and the session's idleness), and the context of the
// POST that carried each, for its handler's values.

// took records what the Peer's Read is returning (m, the Read numbered
// ss.reads): its stream awaits the replies to its requests, and its
// cancel notifications take effect. Called with mu held.
func (ss *session) took(m *inMsg) {
	if st := m.st; st != nil {
		st.read = ss.reads
		st.ids = m.p.ids
		ss.byRead[ss.reads] = st
		for _, id := range st.ids {
			ss.byID[id] = st
		}
	}
	for _, id := range m.p.ids {
		if _, twice := ss.reqCtx[id]; twice {
			ss.reqCtx[id] = nil // two POSTs, one id: neither's values
		} else {
			ss.reqCtx[id] = m.ctx
		}
	}
	for _, id := range m.p.cancels {
		ss.cancelCall(id)
	}
}

// cancelCall records that the client cancelled call id, which gets no
// reply: once none of its stream's requests awaits a reply, the stream
// awaits nothing (the session may idle), and once its client lets it go
// (at once if none holds it) it is kept as an ended stream is, among the
// last maxDoneStreams, for a client that resumes it (the TypeScript SDK
// does, after it aborted the call). A POST that takes only JSON has
// nothing to resume: it is answered 202 Accepted, with no body, at once.
// Called with mu held.
func (ss *session) cancelCall(id string) {
	st := ss.byID[id]
	if st == nil {
		return // answered already, or not ours
	}
	delete(ss.byID, id)
	delete(ss.reqCtx, id)
	for i, x := range st.ids {
		if x == id {
			st.ids = append(st.ids[:i:i], st.ids[i+1:]...)
			break
		}
	}
	if len(st.ids) > 0 || st.ended {
		return
	}
	st.cancelled = true
	delete(ss.byRead, st.read)
	switch {
	case st.json && st.gone:
		ss.forget(st) // its client went away: nothing to answer, nothing to keep
	case st.json:
		st.signal() // its POST is answered 202: no reply will come (writeJSON)
	case st.writer == nil:
		ss.retire(st)
	}
}

// endStream records that st's reply is in: nothing more comes on it.
// Called with mu held.
func (ss *session) endStream(st *stream) {
	st.ended = true
	for _, id := range st.ids {
		if ss.byID[id] == st {
			delete(ss.byID, id)
		}
		delete(ss.reqCtx, id)
	}
	st.ids = nil
}

// requestValues is the interceptor a session's Peer runs first: a call's
// handler gets, over its ctx's values, those of the context of the POST
// that carried the call.
func (ss *session) requestValues(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
	if info.Outbound || info.ID.IsZero() {
		return next(ctx)
	}
	key := info.ID.String()
	ss.mu.Lock()
	rc := ss.reqCtx[key]
	delete(ss.reqCtx, key)
	ss.mu.Unlock()
	if rc != nil {
		ctx = valuesOf{Context: ctx, vals: rc}
	}
	return next(ctx)
}

// valuesOf is a context that looks its values up in vals first, then in
// its own chain; its deadline, cancellation and error are its own.
type valuesOf struct {
	context.Context
	vals context.Context
}

func (c valuesOf) Value(key any) any {
	if v := c.vals.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}
