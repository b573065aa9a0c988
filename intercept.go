package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
)

// CallInfo describes a call or notification passing through an Interceptor.
type CallInfo struct {
	// Peer is the Peer that serves or sends it.
	Peer *Peer
	// Outbound is true for what this Peer sends (Call, Notify, the elements
	// of a Batch) and false for what it serves.
	Outbound bool
	// Method is the method name.
	Method string
	// ID is the request id, or the zero ID for a notification.
	ID ID
	// Params are the raw params, nil when absent. An interceptor may
	// replace them before it calls next (to add a token to every outbound
	// call, say): outbound, what reaches the wire is Params as next finds
	// them, which must then be a JSON object or array (or nil); inbound,
	// the handler gets them as its Request.Params.
	Params json.RawMessage
}

// Invoker carries a call or notification on, to the next Interceptor and
// finally to the handler (inbound) or the wire (outbound). It returns the
// outcome: the handler's result and error inbound; outbound, the reply's
// result as a json.RawMessage (nil for a notification) and its error, an
// *Error when the remote side answered with one.
type Invoker func(ctx context.Context) (result any, err error)

// An Interceptor wraps every inbound handler and every outbound call and
// notification of a Peer (Options.Interceptors): it sees the method, the id
// and the params, may time, log, count or trace what happens in next, may
// change ctx, and may refuse by returning an error without calling next.
// Inbound, its error is mapped as a handler's is (Options.MapError);
// outbound, it is what Call returns. A result an outbound interceptor
// returns in place of next's is marshalled if it is not a json.RawMessage.
//
// Interceptors compose: the first in Options.Interceptors is the
// outermost. They run on the goroutine of the handler or the caller. A
// handler's panic reaches them as the Internal error its caller gets,
// logged (Options.Logger) with the ctx the handler was given, so that a
// span an interceptor started is on the record.
type Interceptor func(ctx context.Context, info *CallInfo, next Invoker) (result any, err error)

// intercept runs inner wrapped in the Peer's interceptors (at least one)
// for info. The first is called directly, with no Invoker of its own: with
// one interceptor the chain costs no allocation beyond inner.
func (p *Peer) intercept(ctx context.Context, info *CallInfo, inner Invoker) (any, error) {
	ics := p.opts.Interceptors
	next := inner
	for i := len(ics) - 1; i >= 1; i-- {
		ic, n := ics[i], next
		next = func(ctx context.Context) (any, error) { return ic(ctx, info, n) }
	}
	return ics[0](ctx, info, next)
}

// invokerResult turns a reply to a call of method, or the failure to get
// one, into what an outbound Invoker returns.
func invokerResult(method string, resp *response, err error) (any, error) {
	switch {
	case err != nil:
		return nil, err
	case resp.Error != nil:
		return nil, fromCall(resp.Error, method)
	}
	return resp.Result, nil
}

// rawResult turns what an outbound Invoker chain returned into raw JSON.
func rawResult(v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	return marshalResult(v)
}

// checkParams checks params an interceptor may have replaced: nil, or JSON
// that begins as an object or array does.
func checkParams(raw json.RawMessage) error {
	if t := trimSpace(raw); raw != nil && (len(t) == 0 || t[0] != '{' && t[0] != '[') {
		return fmt.Errorf("%w: an interceptor set params that are not a JSON object or array", ErrInvalidParams)
	}
	return nil
}
