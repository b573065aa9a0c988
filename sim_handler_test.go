package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/peerwire/jsonrpc"
)

// What the simulation's Peers do: the handler both sides serve, which does
// what each request's simStep says, and the calls, notifications and
// batches that workers and nesting handlers make.

// simFailCode is the error code of the "fail" method.
const simFailCode = 4321

// handler is side s's Handler.
func (rn *simRun) handler(s int) jsonrpc.Handler {
	ordered := !rn.plan.sides[s].opts.ConcurrentNotifications
	return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		if ok, res, err := rn.progressRequest(s, req, ordered); ok {
			return res, err
		}
		var st simStep
		if err := json.Unmarshal(req.Params, &st); err != nil {
			rn.c.fail("U", "side %c got params it cannot decode: %v", 'a'+s, err)
			return nil, err
		}
		if st.Pre {
			rn.c.fail("E", "side %c got %v, whose caller's ctx had ended before it was made", 'a'+s, &st)
		}
		defer rn.c.handlerStart(s, st.String(), ctx)()
		if req.IsNotification() {
			rn.c.received(s, st.St, st.Sq, st.via(), ordered)
		}
		return rn.serve(ctx, s, &st)
	})
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// serve does what st says, on side s.
func (rn *simRun) serve(ctx context.Context, s int, st *simStep) (any, error) {
	p := jsonrpc.PeerFromContext(ctx)
	switch st.Kind {
	case "echo":
		return st.Tok, nil
	case "big":
		return strings.Repeat("b", st.N), nil
	case "slow":
		simSleep(ctx, ms(st.N))
	case "hold":
		if st.N == 0 {
			<-ctx.Done()
		} else {
			simSleep(ctx, ms(st.N))
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	case "nest":
		for i := range st.Nest {
			n := &st.Nest[i]
			nctx, cancel := context.WithTimeout(ctx, ms(n.T))
			label := fmt.Sprintf("side %c nested in %v: %v", 'a'+s, st, n)
			if n.Note {
				rn.notify(nctx, s, p, n, label)
			} else {
				rn.call(nctx, s, p, n, label)
			}
			cancel()
		}
	case "fail":
		return nil, &jsonrpc.Error{Code: simFailCode, Message: "fail"}
	case "prog":
		return progressEnded(rn.serveProgress(ctx, st))
	case "own":
		return progressEnded(rn.serveOwn(ctx, st))
	case "close":
		r := rn.c.begin(fmt.Sprintf("side %c Close from a handler", 'a'+s), nil)
		p.Close()
		rn.c.end(r)
	case "shutdown":
		sctx, cancel := context.WithTimeout(ctx, ms(st.N))
		defer cancel()
		r := rn.c.begin(fmt.Sprintf("side %c Shutdown from a handler", 'a'+s), sctx)
		p.Shutdown(sctx)
		rn.c.end(r)
	default:
		return nil, fmt.Errorf("unknown kind %q", st.Kind)
	}
	return "ok", nil
}

// call calls st on the other side of side s's Peer p, times it and checks
// its outcome.
func (rn *simRun) call(ctx context.Context, s int, p *jsonrpc.Peer, st *simStep, label string) error {
	var res json.RawMessage
	r := rn.c.begin(label, ctx)
	err := p.Call(ctx, st.Kind, st, &res)
	rn.c.end(r)
	rn.classify(ctx, st, err, label)
	if err == nil {
		rn.checkResult(st, res, label)
	}
	return err
}

// notify sends st, times it, and records whether it was reported written
// (and not too long for the other side, which skips it unread).
func (rn *simRun) notify(ctx context.Context, s int, p *jsonrpc.Peer, st *simStep, label string) error {
	r := rn.c.begin(label, ctx)
	err := p.Notify(ctx, st.Kind, st)
	rn.c.end(r)
	rn.classify(ctx, st, err, label)
	rn.c.sent(st.St, st.Sq, st.via(), err == nil && !rn.plan.overRemoteCap(s, st))
	return err
}

// batch sends steps as one Batch, times it and checks each element. Its
// notifications count as written if Batch returned nil, unless a call of
// the batch was refused (a refusal takes the whole batch).
func (rn *simRun) batch(ctx context.Context, s int, p *jsonrpc.Peer, steps []simStep, label string) error {
	elems := make([]jsonrpc.BatchElem, len(steps))
	res := make([]json.RawMessage, len(steps))
	for i := range steps {
		elems[i] = jsonrpc.BatchElem{Method: steps[i].Kind, Params: &steps[i], Notification: steps[i].Note}
		if !steps[i].Note {
			elems[i].Result = &res[i]
		}
	}
	r := rn.c.begin(label, ctx)
	err := p.Batch(ctx, elems)
	rn.c.end(r)
	rn.classify(ctx, nil, err, label)
	refused := false
	for i := range steps {
		if steps[i].Note || err != nil {
			continue
		}
		e := elems[i].Error
		refused = refused || errors.Is(e, &jsonrpc.Error{Code: jsonrpc.CodeOverloaded}) ||
			errors.Is(e, &jsonrpc.Error{Code: jsonrpc.CodeShuttingDown})
		rn.classify(ctx, &steps[i], e, label)
		if e == nil {
			rn.checkResult(&steps[i], res[i], label)
		}
	}
	for i := range steps {
		if steps[i].Note {
			rn.c.sent(steps[i].St, steps[i].Sq, steps[i].via(), err == nil && !refused)
		}
	}
	return err
}

// classify counts an outcome, and reports one that no documented path
// gives. With a message cap, a message over it fails at once, and a reply
// over it becomes an Internal error saying so.
func (rn *simRun) classify(ctx context.Context, st *simStep, err error, label string) {
	var e *jsonrpc.Error
	kind := ""
	switch {
	case err == nil:
		kind = "ok"
	case ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		kind = "ctx"
	case errors.Is(err, jsonrpc.ErrClosed):
		kind = "closed"
	case errors.Is(err, jsonrpc.ErrTooManyPending):
		kind = "too many pending"
	case rn.plan.msgCap > 0 && (errors.Is(err, jsonrpc.ErrMessageTooLarge) ||
		errors.As(err, &e) && e.Code == jsonrpc.CodeInternalError && strings.Contains(string(e.Data), "too large")):
		kind = "too large"
	case errors.As(err, &e) && e.Code == jsonrpc.CodeOverloaded:
		kind = "overloaded"
	case errors.As(err, &e) && e.Code == jsonrpc.CodeShuttingDown:
		kind = "shutting down"
	case errors.As(err, &e) && e.Code == jsonrpc.CodeRequestCancelled && st != nil && st.Kind == "hold":
		kind = "cancelled"
	case errors.As(err, &e) && e.Code == simFailCode && st != nil && st.Kind == "fail":
		kind = "fail"
	case progressOverflow(st, err):
		kind = "progress overflow"
	case errors.As(err, &e) && e.Code == simOwnFailCode && st != nil && (st.Kind == "own" || st.Kind == "prog"):
		kind = "progress ended"
	default:
		rn.c.fail("U", "%s: unexpected error %v", label, err)
		kind = "unexpected"
	}
	rn.c.outcome(kind)
}

// progressEnded turns the failure of a progress handler whose connection
// or ctx is ending, or whose StartProgress the other side refused, into
// an error the caller can tell (simOwnFailCode); any other failure stays
// as it is, and reaches the caller as an Internal error (invariant U).
func progressEnded(res any, err error) (any, error) {
	var e *jsonrpc.Error
	switch {
	case err == nil, errors.As(err, &e):
		return res, err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, jsonrpc.ErrClosed):
		return nil, &jsonrpc.Error{Code: simOwnFailCode, Message: err.Error()}
	}
	return nil, err
}

// checkResult checks that a call got its own result.
func (rn *simRun) checkResult(st *simStep, res json.RawMessage, label string) {
	var got string
	if err := json.Unmarshal(res, &got); err != nil {
		rn.c.fail("R", "%s: result %.80q: %v", label, res, err)
		return
	}
	switch {
	case st.Kind == "echo" && got != st.Tok,
		st.Kind == "big" && len(got) != st.N,
		st.Kind != "echo" && st.Kind != "big" && got != "ok":
		rn.c.fail("R", "%s: got the result %.40q", label, got)
	}
}
