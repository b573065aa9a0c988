package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// Progress in the simulation (sim_extend_test.go says which plans have
// it), and invariant P: every progress value reaches the function of the
// call it belongs to, all of them in order before the call returns, and
// progress that a handler starts by itself reaches the other side's
// Handler (counted as a stream of notifications, invariant 3), never a
// call's function.

// simProgValue is a progress value: of a call's progress (C, the call's
// Tok, and I, its place), or of progress a handler started (Own, its
// stream St and place Sq).
type simProgValue struct {
	C   string `json:"c,omitempty"`
	I   int    `json:"i"`
	Own string `json:"own,omitempty"`
	St  int    `json:"st,omitempty"`
	Sq  int    `json:"sq,omitempty"`
}

// simOwnFailCode is the error of an "own" handler whose StartProgress
// failed (the other side refused, or the connection is ending).
const simOwnFailCode = 4322

// serveProgress is the "prog" handler: it reports st.N values of work-done
// progress (and partial results, when the caller asked for them), each
// with st.Sib bytes beside it in LSP's dialect, then returns.
func (rn *simRun) serveProgress(ctx context.Context, st *simStep) (any, error) {
	d := rn.plan.progress
	p := jsonrpc.PeerFromContext(ctx)
	work, partial := d.Tokens(jsonrpc.RequestFromContext(ctx).Params)
	sib := strings.Repeat("s", st.Sib)
	for i := range st.N {
		v := simProgValue{C: st.Tok, I: i}
		var err error
		switch {
		case work.IsZero():
		case st.Sib > 0 && d == jsonrpc.LSPProgress:
			raw, _ := json.Marshal(v)
			params := d.Params(work, raw)
			params = append(append(append(params[:len(params)-1], `,"sib":"`...), sib...), `"}`...)
			err = p.Notify(ctx, d.Method, json.RawMessage(params))
		default:
			err = jsonrpc.ReportProgress(ctx, v)
		}
		if err == nil && !partial.IsZero() {
			err = jsonrpc.ReportPartialResult(ctx, v)
		}
		if err != nil {
			return nil, err
		}
	}
	return "ok", nil
}

// serveOwn is the "own" handler: it starts progress of its own (LSP's
// window/workDoneProgress/create) and reports st.N values, each a
// notification of stream st.St for invariant 3.
func (rn *simRun) serveOwn(ctx context.Context, st *simStep) (any, error) {
	pctx, err := jsonrpc.StartProgress(ctx)
	if err != nil {
		return nil, &jsonrpc.Error{Code: simOwnFailCode, Message: err.Error()}
	}
	for i := range st.N {
		err := jsonrpc.ReportProgress(pctx, simProgValue{Own: st.Tok, St: st.St, Sq: i})
		rn.c.sent(st.St, i, "progress", err == nil)
		if err != nil {
			return nil, err
		}
	}
	return "ok", nil
}

// progressRequest serves, on side s, the requests of the progress dialect
// that reach the Handler: a Create call, accepted, and progress
// notifications, which must be progress a handler of the other side
// started, never a call's. It reports false for any other request.
func (rn *simRun) progressRequest(s int, req *jsonrpc.Request, ordered bool) (bool, any, error) {
	d := rn.plan.progress
	switch {
	case d == nil:
		return false, nil, nil
	case req.Method == d.Create && d.Create != "":
		return true, nil, nil
	case req.Method != d.Method:
		return false, nil, nil
	}
	token, value, ok := d.Parse(req.Params)
	var v simProgValue
	if !ok || json.Unmarshal(value, &v) != nil {
		rn.c.fail("P", "side %c's Handler got progress it cannot read: %.80s", 'a'+s, req.Params)
		return true, nil, nil
	}
	if v.Own == "" {
		rn.c.fail("P misrouted", "side %c's Handler got the progress of call %s (value %d, token %s): it belongs to that call's function",
			'a'+s, v.C, v.I, token)
		return true, nil, nil
	}
	rn.c.received(s, v.St, v.Sq, "progress", ordered)
	return true, nil, nil
}

// simProgress is what a call's progress functions saw.
type simProgress struct {
	mu            sync.Mutex
	work, partial []int
}

// withProgress returns ctx with the progress functions of the call st,
// which check that every value is the call's own, and the record of what
// they saw.
func (rn *simRun) withProgress(ctx context.Context, op *simOp, label string) (context.Context, *simProgress) {
	rec := &simProgress{}
	seen := func(kind string, into *[]int) func(json.RawMessage) {
		return func(raw json.RawMessage) {
			var v simProgValue
			if err := json.Unmarshal(raw, &v); err != nil || v.C != op.step.Tok {
				rn.c.fail("P misrouted", "%s: its %s function got %.80s, not a value of its own", label, kind, raw)
				return
			}
			rec.mu.Lock()
			first := len(rec.work)+len(rec.partial) == 0
			*into = append(*into, v.I)
			rec.mu.Unlock()
			if first && op.slowFn > 0 {
				time.Sleep(op.slowFn) // busy: the values behind it wait, held by the Peer
			}
		}
	}
	ctx = jsonrpc.WithProgress(ctx, seen("progress", &rec.work))
	if rn.plan.progress == jsonrpc.LSPProgress {
		ctx = jsonrpc.WithPartialResults(ctx, seen("partial result", &rec.partial))
	}
	return ctx, rec
}

// checkProgress checks, once a call with progress has returned its
// result, that its functions saw every value, in order.
func (rn *simRun) checkProgress(st *simStep, rec *simProgress, label string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := func(kind string, got []int) {
		for i, v := range got {
			if v != i {
				rn.c.fail("P order", "%s: its %s function saw %v", label, kind, got)
				return
			}
		}
		if len(got) != st.N {
			rn.c.fail("P lost", "%s: its %s function saw %d of %d values before the call returned", label, kind, len(got), st.N)
		}
	}
	want("progress", rec.work)
	if rn.plan.progress == jsonrpc.LSPProgress {
		want("partial result", rec.partial)
	}
}

// progressOverflow reports whether err is a call's failure because its
// progress went over the budget (documented: Options.Progress).
func progressOverflow(st *simStep, err error) bool {
	return st != nil && st.Kind == "prog" && errors.Is(err, jsonrpc.ErrOverloaded)
}

// preEndedCheck holds invariant E for an operation whose ctx had ended
// before it was made: it fails, and sends nothing (the other side's
// handler reports a request marked Pre).
func (rn *simRun) preEndedCheck(err error, label string) {
	if err == nil {
		rn.c.fail("E", "%s: returned nil though its ctx had ended before it was made", label)
	}
}

// answerCheck holds invariant A for an operation every call of which must
// be answered while the connection lives: it must not end with its ctx.
func (rn *simRun) answerCheck(ctx context.Context, err error, label string) {
	if err == nil || ctx.Err() == nil || errors.Is(err, jsonrpc.ErrClosed) {
		return
	}
	for s := range 2 {
		if p := rn.peers[s].Load(); p != nil {
			select {
			case <-p.Done():
				return // the connection ended meanwhile
			default:
			}
		}
	}
	rn.c.fail("A", "%s: not answered within its ctx (%v), both sides alive", label, err)
}

// String describes a progress value, for logs.
func (v simProgValue) String() string {
	if v.Own != "" {
		return fmt.Sprintf("own %s %d/%d", v.Own, v.St, v.Sq)
	}
	return fmt.Sprintf("%s #%d", v.C, v.I)
}
