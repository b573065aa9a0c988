package jsonrpc_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/peerwire/jsonrpc"
)

// The generator of plans (sim_plan_test.go): every random choice of a
// simulation run is made here, from the run's seed, before it starts.

// simGen draws a plan.
type simGen struct {
	r       *rand.Rand
	p       *simPlan
	streams int
}

// simGenerate draws the plan of seed.
func simGenerate(seed uint64) *simPlan {
	g := &simGen{r: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)), p: &simPlan{seed: seed}}
	p := g.p
	p.transport = simTransportOf(seed)
	p.cancel = []*jsonrpc.CancelDialect{nil, jsonrpc.LSPCancel, jsonrpc.MCPCancel}[g.r.IntN(3)]
	if p.transport != simPipe && g.chance(30) {
		p.msgCap = g.between(16, 48) << 10
	}
	if p.transport == simWS && g.r.IntN(2) == 0 {
		p.ping = time.Duration(300+g.r.IntN(700)) * time.Millisecond
	}
	for s := range p.sides {
		p.sides[s] = g.side()
	}
	g.fault()
	if g.chance(10) {
		g.flood()
	}
	// Drawn last, so that the draws above stay those of every seed
	// reported before they were added.
	for s := range p.sides {
		p.sides[s].delaySlow = p.sides[s].intercept && g.chance(50)
	}
	g.extend()
	return p
}

// flood turns the plan into one side flooding the other, which serves
// only, with notifications behind one whose handler holds until the end:
// the receiver pushes back, and must still see the flooding side go when
// it ends from outside (invariant 4).
func (g *simGen) flood() {
	s := g.r.IntN(2)
	stream, seq := g.stream(), 0
	var ops []simOp
	for i := range g.between(30, 80) {
		st := simStep{Kind: "echo", Note: true, St: stream, Sq: seq, Pad: g.pad(2048)}
		if i == 0 {
			st.Kind = "hold"
		}
		seq++
		ops = append(ops, simOp{kind: opNotify, think: g.ms(0, 2), timeout: g.ms(100, 500), step: st})
		g.sized([]simStep{st})
	}
	g.p.ops -= g.p.sides[0].ops() + g.p.sides[1].ops()
	g.p.sides[s].workers = [][]simOp{ops}
	g.p.sides[1-s].workers = nil
	g.p.ops += len(ops)
	kinds := []simFaultKind{faultAbrupt, faultClose, faultShutdown}
	g.p.fault = simFault{kind: kinds[g.r.IntN(len(kinds))], side: s, at: g.ms(200, 1000), wait: g.ms(50, 500)}
	g.p.flood = true
}

func (s *simSide) ops() int {
	n := 0
	for _, w := range s.workers {
		n += len(w)
	}
	return n
}

func (g *simGen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

func (g *simGen) ms(lo, hi int) time.Duration {
	return time.Duration(g.between(lo, hi)) * time.Millisecond
}

func (g *simGen) chance(pct int) bool { return g.r.IntN(100) < pct }

func (g *simGen) side() simSide {
	var s simSide
	o := &s.opts
	o.MaxConcurrent = g.between(2, 8)
	o.MaxQueued = g.between(2, 32)
	o.MaxQueuedBytes = g.between(16, 64) << 10
	o.MaxOutboundBytes = g.between(16, 64) << 10
	o.BatchConcurrency = g.between(1, 4)
	switch g.r.IntN(4) {
	case 0:
		o.DrainTimeout = -1
	case 1:
		o.DrainTimeout = g.ms(50, 500)
	} // else the default, 1 s
	if g.chance(15) {
		o.WriteTimeout = 2 * time.Second
	}
	if g.chance(15) {
		o.MaxPending = g.between(2, 16)
	}
	o.ConcurrentNotifications = g.chance(10)
	s.intercept = g.chance(20)
	s.serve = g.chance(30)
	// Most sides are busy; some make a few operations, or none, and
	// mostly serve: a side with nothing to write is the one that pushes
	// back on a flood of notifications by not reading.
	nw, total := g.between(1, 4), g.between(40, 120)
	switch x := g.r.IntN(100); {
	case x < 10:
		nw = 0
	case x < 30:
		nw, total = 1, g.between(3, 15)
	}
	perWorker := 0
	if nw > 0 {
		perWorker = total / nw
	}
	for range nw {
		stream := g.stream()
		seq := 0
		var ops []simOp
		for range perWorker {
			ops = append(ops, g.op(stream, &seq))
		}
		s.workers = append(s.workers, ops)
		g.p.ops += len(ops)
	}
	for range g.r.IntN(3) {
		w := simWindow{at: g.ms(0, 2000), dur: g.ms(20, 500)}
		if g.chance(40) {
			w.delay = time.Duration(g.between(100, 3000)) * time.Microsecond
		}
		s.pauses = append(s.pauses, w)
	}
	return s
}

func (g *simGen) stream() int { g.streams++; return g.streams }

// op draws one operation of a worker whose notifications go in stream.
func (g *simGen) op(stream int, seq *int) simOp {
	o := simOp{}
	if g.chance(60) {
		o.think = g.ms(0, 10)
	}
	switch g.r.IntN(4) {
	case 0:
		o.timeout = g.ms(2, 50)
	case 3:
		o.timeout = g.ms(500, 2000)
	default:
		o.timeout = g.ms(50, 500)
	}
	if g.chance(20) {
		o.cancel = time.Duration(float64(o.timeout) * (0.1 + 0.8*g.r.Float64()))
	}
	switch x := g.r.IntN(100); {
	case x < 40:
		o.kind, o.step = opCall, g.call(0, 4096)
		g.sized([]simStep{o.step})
	case x < 75:
		o.kind, o.step = opNotify, g.note(0, stream, seq, 4096)
		g.sized([]simStep{o.step})
	case x < 95:
		o.kind, o.elems = opBatch, g.batch(stream, seq)
		g.sized(o.elems)
	default:
		o.kind, o.timeout = opSleep, g.ms(1, 100)
	}
	return o
}

// call draws a call at nesting depth d with up to maxPad bytes of bulk.
func (g *simGen) call(d, maxPad int) simStep {
	s := simStep{Pad: g.pad(maxPad)}
	switch x := g.r.IntN(100); {
	case x < 35:
		s.Kind, s.Tok = "echo", fmt.Sprintf("tok%x", g.r.Uint32())
	case x < 45:
		s.Kind, s.N = "big", g.between(1, 8)<<10
	case x < 60:
		s.Kind, s.N = "slow", g.between(1, 300)
	case x < 70:
		s.Kind, s.N = "hold", g.between(100, 2000)
		if g.p.cancel != nil && g.chance(30) {
			s.N = 0 // until the caller cancels it, or the end
		}
	case x < 92 && d < 2:
		s.Kind = "nest"
		s.Nest = g.nested(d + 1)
	default:
		s.Kind = "fail"
	}
	g.reply(s)
	return s
}

// nested draws the requests a nest handler at depth d sends back.
func (g *simGen) nested(d int) []simStep {
	var out []simStep
	stream, seq := 0, 0
	for range g.between(1, 3) {
		if g.chance(40) {
			if stream == 0 {
				stream = g.stream()
			}
			out = append(out, g.note(d, stream, &seq, 256))
			continue
		}
		s := g.call(d, 256)
		s.T = g.between(5, 500)
		out = append(out, s)
	}
	return out
}

// note draws a notification of stream, the next in it.
func (g *simGen) note(d, stream int, seq *int, maxPad int) simStep {
	s := simStep{Kind: "echo", Note: true, St: stream, Sq: *seq, Pad: g.pad(maxPad)}
	*seq++
	switch x := g.r.IntN(100); {
	case x < 70:
	case x < 90:
		s.Kind, s.N = "slow", g.between(1, 50)
	case x < 95:
		s.Kind, s.N = "hold", g.between(50, 1000)
		if g.p.transport.fakeTime() && g.chance(20) {
			// The notifications behind it wait for the end, and the
			// other side's operations mostly for their ctx: free on a
			// fake clock, seconds a run in real time.
			s.N = 0
		}
	case d < 2:
		s.Kind, s.Nest = "nest", g.nested(d+1)
	}
	return s
}

// batch draws a batch: calls and notifications of stream, notifications
// only, or (bulk) big results only.
func (g *simGen) batch(stream int, seq *int) []simStep {
	n := g.between(1, 4)
	if g.chance(25) {
		n = g.between(5, 16)
	}
	kind := g.r.IntN(10) // 0, 1: notifications only; 2: bulk
	out := make([]simStep, n)
	calls := 0
	for i := range out {
		switch {
		case kind < 2 || kind > 2 && g.chance(50):
			out[i] = g.note(1, stream, seq, 256)
			continue
		case kind == 2:
			out[i] = simStep{Kind: "big", N: g.between(4, 8) << 10}
		default:
			out[i] = g.call(1, 256)
			if out[i].Kind == "hold" && out[i].N == 0 || g.chance(20) {
				out[i] = simStep{Kind: "big", N: g.between(1, 8) << 10}
			}
		}
		calls++
		if out[i].Kind == "big" {
			g.p.maxElem = max(g.p.maxElem, out[i].N+simEnvelope)
		}
	}
	for i := range out {
		if out[i].Note {
			out[i].In = map[bool]string{false: "batch", true: "notes-batch"}[calls == 0]
		}
	}
	return out
}

// pad draws bulk of up to max bytes, mostly small.
func (g *simGen) pad(max int) string {
	n := g.r.IntN(min(max, 256) + 1)
	if g.chance(25) {
		n = g.r.IntN(max + 1)
	}
	return strings.Repeat("p", n)
}

// sized accounts for a message of steps (one, or a batch) in maxMsg and
// maxCharge, and for the requests nested in them.
func (g *simGen) sized(steps []simStep) {
	n := 0
	for _, s := range steps {
		b, _ := json.Marshal(s)
		n += len(b) + simEnvelope
		for _, nested := range s.Nest {
			g.sized([]simStep{nested})
		}
	}
	g.p.maxMsg = max(g.p.maxMsg, n)
	// A request is charged the capacity of what its transport read it
	// into (rounded up by the allocator, an eighth at most, a page for
	// large ones), and msgOverhead per element.
	g.p.maxCharge = max(g.p.maxCharge, simAlloc(n)+256*len(steps))
	g.p.maxBatch = max(g.p.maxBatch, len(steps))
}

// simAlloc is the most capacity a message of n bytes may keep alive,
// which is what it is charged: a buffer that append grew while encoding
// it (up to twice, and a size class more), or a pooled one, which the
// send queue keeps while it is at most 4n + 4 KiB and copies the message
// out of past that.
func simAlloc(n int) int { return 4*n + 8192 }

// reply accounts for the reply to a call s, alone or in a batch.
func (g *simGen) reply(s simStep) {
	g.p.maxMsg = max(g.p.maxMsg, s.N+simEnvelope) // N bytes of result at most
	g.p.maxElem = max(g.p.maxElem, s.N+simEnvelope)
}

// fault draws the run's terminal fault, if any.
func (g *simGen) fault() {
	f := simFault{side: g.r.IntN(2), at: g.ms(50, 1500), wait: g.ms(50, 1000)}
	switch x := g.r.IntN(100); {
	case x < 10:
		f.kind = faultAbrupt
	case x < 18:
		f.kind = faultClose
	case x < 26:
		f.kind = faultShutdown
	case x < 32:
		f.kind = faultHandlerClose
	case x < 38:
		f.kind = faultHandlerShutdown
	case x < 42:
		f.kind = faultConnectClose
	case x < 46:
		f.kind = faultConnectShutdown
	}
	g.p.fault = f
	if f.kind != faultHandlerClose && f.kind != faultHandlerShutdown {
		return
	}
	// The other side asks for it, in one of its workers' ops.
	kind := map[simFaultKind]string{faultHandlerClose: "close", faultHandlerShutdown: "shutdown"}[f.kind]
	ws := g.p.sides[1-f.side].workers
	if len(ws) == 0 {
		g.p.fault.kind = faultClose // nobody to ask: from outside instead
		return
	}
	w := ws[g.r.IntN(len(ws))]
	i := len(w)/2 + g.r.IntN(len(w)-len(w)/2) // late enough for the run to be under way
	w[i] = simOp{kind: opCall, timeout: 2 * time.Second, step: simStep{Kind: kind, N: int(f.wait / time.Millisecond)}}
}
