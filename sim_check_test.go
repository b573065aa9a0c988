package jsonrpc_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// What a simulation run observes, and the invariants it holds it to (see
// sim_test.go for the list). Every method is safe for concurrent use.

// simChecker collects the run's observations and violations.
type simChecker struct {
	bound time.Duration // the slack every timing invariant allows

	mu          sync.Mutex
	violations  []simViolation
	perInv      map[string]int // violations per invariant, also those not kept
	pending     map[*simOpRec]struct{}
	worst       time.Duration // the longest an operation outlived its ctx
	worstOp     string
	outcomes    map[string]int
	streams     map[int]*simStream
	sentVia     map[[2]int]string
	inBound     [2]int // invariant 2, per side
	outBound    [2]int
	ctlBound    int
	peakIn      [2]int
	peakOut     [2]int
	peakCtl     [2]int
	memReported [2]bool
	handlers    []*simHandlerRec
	inflight    [2]int
	activity    time.Time // last handler start or return

	peakHeap     int64 // invariant "2 heap" (sim_heap_test.go)
	peakHeapAt   string
	heapReported bool
}

// simRefusal is about the most an element's CodeOverloaded answer takes.
const simRefusal = 128

// simKeep bounds the violations kept per invariant.
const simKeep = 3

func newSimChecker(p *simPlan, bound time.Duration) *simChecker {
	c := &simChecker{
		bound:    bound,
		perInv:   map[string]int{},
		pending:  map[*simOpRec]struct{}{},
		outcomes: map[string]int{},
		streams:  map[int]*simStream{},
		sentVia:  map[[2]int]string{},
		ctlBound: jsonrpc.MaxControlBytes + p.maxMsg,
		activity: time.Now(),
	}
	for s, sd := range p.sides {
		// Invariant 2, what the README's limits table allows: inbound
		// work within twice its budget (or one message alone), and the
		// replies of the batch elements running when the budget fills (a
		// slot each); unwritten messages within their budget, or one
		// message alone, a batch's reply array included, which is held to
		// the inbound budget give or take the elements running when it
		// fills.
		// The elements of a batch not run once the budget is full are
		// answered CodeOverloaded, each answer charged too
		// (simRefusal).
		o := sd.opts
		c.inBound[s] = max(2*o.MaxQueuedBytes, p.maxCharge) + o.MaxConcurrent*p.maxElem + p.maxBatch*simRefusal
		// A queued message is charged the capacity it keeps alive.
		c.outBound[s] = max(o.MaxOutboundBytes, simAlloc(p.maxMsg), simAlloc(o.MaxQueuedBytes+o.BatchConcurrency*p.maxElem))
	}
	return c
}

// fail records a violation of invariant inv ("1".."5", or "R" for a wrong
// result, "U" for an unexpected error, with a word saying how after the
// number when it can fail in more than one way).
func (c *simChecker) fail(inv, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(inv, format, args...)
}

func (c *simChecker) failLocked(inv, format string, args ...any) {
	c.perInv[inv]++
	if c.perInv[inv] <= simKeep {
		c.violations = append(c.violations, simViolation{inv, fmt.Sprintf(format, args...)})
	}
}

// simViolation is one violation of invariant inv.
type simViolation struct{ inv, text string }

func (v simViolation) String() string { return fmt.Sprintf("invariant %s: %s", v.inv, v.text) }

// key is how -sim.ignore names v's invariant: its name without spaces.
func (v simViolation) key() string { return strings.ReplaceAll(v.inv, " ", "") }

// failed returns the violations, with a count of those not kept.
func (c *simChecker) failed() []simViolation {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]simViolation(nil), c.violations...)
	var more []simViolation
	for inv, n := range c.perInv {
		if n > simKeep {
			more = append(more, simViolation{inv, fmt.Sprintf("%d more like these", n-simKeep)})
		}
	}
	sort.Slice(more, func(i, j int) bool { return more[i].inv < more[j].inv })
	return append(out, more...)
}

// Invariant 1: every operation returns by its ctx's end plus the bound (an
// operation with no ctx, such as Close, within the bound of its start).

// simOpRec is one operation being timed.
type simOpRec struct {
	what          string
	start, ctxEnd time.Time // ctxEnd: zero while the ctx lasts
	late          bool      // reported by watch
	stop          func() bool
}

// from says what r is bounded by.
func (r *simOpRec) from() string {
	if r.stop == nil {
		return "its start"
	}
	return "its ctx ended"
}

// begin starts timing what, bounded by ctx (nil: by its start).
func (c *simChecker) begin(what string, ctx context.Context) *simOpRec {
	r := &simOpRec{what: what, start: time.Now()}
	if ctx == nil {
		r.ctxEnd = r.start
	} else {
		r.stop = context.AfterFunc(ctx, func() {
			c.mu.Lock()
			r.ctxEnd = time.Now()
			c.mu.Unlock()
		})
	}
	c.mu.Lock()
	c.pending[r] = struct{}{}
	c.mu.Unlock()
	return r
}

// end records that r returned.
func (c *simChecker) end(r *simOpRec) {
	now := time.Now()
	if r.stop != nil {
		r.stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, r)
	if r.ctxEnd.IsZero() {
		return
	}
	over := now.Sub(r.ctxEnd) // with no ctx: since its start
	if r.stop != nil && over > c.worst {
		c.worst, c.worstOp = over, r.what
	}
	if over > c.bound && !r.late {
		c.failLocked("1", "%s returned %v after %s (bound %v)", r.what, over.Round(time.Millisecond), r.from(), c.bound)
	}
}

// watch reports the operations that have outlived their ctx by more than
// the bound and have not returned yet.
func (c *simChecker) watch() {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for r := range c.pending {
		if !r.late && !r.ctxEnd.IsZero() && now.Sub(r.ctxEnd) > c.bound {
			r.late = true
			c.failLocked("1", "%s has not returned %v after %s", r.what, c.bound, r.from())
		}
	}
}

// outcome counts an operation's outcome, by kind.
func (c *simChecker) outcome(kind string) {
	c.mu.Lock()
	c.outcomes[kind]++
	c.mu.Unlock()
}

// Invariant 2: each side's retained memory stays within its bound.

// sample checks what p, side s, holds now, while it writes msg (or nil).
// Each side's first excess is reported, its peaks in the summary.
func (c *simChecker) sample(s int, p *jsonrpc.Peer, msg []byte) {
	in, out, ctl := jsonrpc.RetainedBytes(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.peakIn[s] = max(c.peakIn[s], in)
	c.peakOut[s] = max(c.peakOut[s], out)
	c.peakCtl[s] = max(c.peakCtl[s], ctl)
	if c.memReported[s] || in <= c.inBound[s] && out <= c.outBound[s] && ctl <= c.ctlBound {
		return
	}
	c.memReported[s] = true
	writing := ""
	if msg != nil {
		writing = fmt.Sprintf(", writing a message of %d B: %.30s...", len(msg), msg)
	}
	c.failLocked("2", "side %c holds %d B inbound (bound %d B), %d B outbound (bound %d B), %d B control (bound %d B)%s",
		'a'+s, in, c.inBound[s], out, c.outBound[s], ctl, c.ctlBound, writing)
}

// Invariant 4: once a side ends, its handlers' contexts end.

// simHandlerRec is one handler call. It keeps its ctx's Done channel, not
// the ctx: a handler's ctx holds its request, and the heap invariant must
// not see the checker's own hold on every request of the run.
type simHandlerRec struct {
	side     int
	what     string
	done     <-chan struct{}
	returned bool
}

// handlerStart records a handler call of side s and returns what to call
// when it returns.
func (c *simChecker) handlerStart(s int, what string, ctx context.Context) (returned func()) {
	h := &simHandlerRec{side: s, what: what, done: ctx.Done()}
	c.mu.Lock()
	c.handlers = append(c.handlers, h)
	c.inflight[s]++
	c.activity = time.Now()
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		h.returned = true
		c.inflight[s]--
		c.activity = time.Now()
		c.mu.Unlock()
	}
}

// idleFor reports how long no handler has started or returned, and how
// many run.
func (c *simChecker) idleFor() (time.Duration, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Since(c.activity), c.inflight[0] + c.inflight[1]
}

// handlersEnded checks, once side s's Wait has returned, that every
// handler of its has returned and seen its ctx end.
func (c *simChecker) handlersEnded(s int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.handlers {
		if h.side != s {
			continue
		}
		select {
		case <-h.done:
		default:
			c.failLocked("4", "side %c's handler %s: its ctx has not ended after Wait returned", 'a'+s, h.what)
			continue
		}
		if !h.returned {
			c.failLocked("4", "side %c's handler %s still runs after Wait returned", 'a'+s, h.what)
		}
	}
}

// summary is one line of what the run saw.
func (c *simChecker) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var kinds []string
	for k, n := range c.outcomes {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("outcomes: %s; worst overshoot %v (%s); peak in/out/control of bound: a %d/%d %d/%d %d, b %d/%d %d/%d %d B; "+
		"peak heap growth %d B (%s); %d handler calls",
		strings.Join(kinds, ", "), c.worst.Round(time.Millisecond), c.worstOp,
		c.peakIn[0], c.inBound[0], c.peakOut[0], c.outBound[0], c.peakCtl[0],
		c.peakIn[1], c.inBound[1], c.peakOut[1], c.outBound[1], c.peakCtl[1], c.peakHeap, c.peakHeapAt, len(c.handlers))
}
