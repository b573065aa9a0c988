package jsonrpc_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/peerwire/jsonrpc"
)

// The plan of a simulation run: everything it does, drawn from its seed
// before it starts, so that a seed replays the same operations, faults
// and parameters (see sim_test.go). Nothing else draws random numbers.

// simTransport is what carries a run's two Conns.
type simTransport int

const (
	simPipe          simTransport = iota // jsonrpc.Pipe, in a synctest bubble
	simLineNetPipe                       // stdio, line framing, over net.Pipe, in a bubble
	simHeaderNetPipe                     // stdio, header framing, over net.Pipe, in a bubble
	simLineTCP                           // stdio, line framing, over loopback TCP
	simHeaderTCP                         // stdio, header framing, over loopback TCP
	simWS                                // ws over loopback TCP (httptest)
	simTransports
)

var simTransportNames = [simTransports]string{
	"pipe", "stdio-line-netpipe", "stdio-header-netpipe", "stdio-line-tcp", "stdio-header-tcp", "ws",
}

// simTransportOf is the transport of a seed: of every 16 consecutive
// seeds, 13 run in a bubble (a quarter of a second each on 2 cores) and 3
// in real time (2 to 7 s each), so that both get about half of a budget.
func simTransportOf(seed uint64) simTransport {
	switch n := seed % 16; {
	case n < 7:
		return simPipe
	case n < 10:
		return simLineNetPipe
	case n < 13:
		return simHeaderNetPipe
	}
	return simLineTCP + simTransport(seed%16-13)
}

func (tr simTransport) String() string { return simTransportNames[tr] }

// fakeTime reports whether runs on tr go in a testing/synctest bubble:
// everything in memory, time fake.
func (tr simTransport) fakeTime() bool { return tr <= simHeaderNetPipe }

// watched reports whether a Peer on tr that pushes back (does not read)
// must still see its remote side go within a bound (invariant 4). Not
// over stdio on a plain stream: the README says such a side notices when
// it next writes or reads, and a stream cannot tell it sooner.
func (tr simTransport) watched() bool { return tr == simPipe || tr == simWS }

// simStep is one request, and what the handler that gets it does. It
// travels as the request's params, so the receiving side needs no plan.
type simStep struct {
	Kind string    `json:"k"`              // the method: echo, big, slow, hold, nest, fail, close, shutdown
	Note bool      `json:"note,omitempty"` // sent as a notification
	Tok  string    `json:"tok,omitempty"`  // echo: the result expected back
	N    int       `json:"n,omitempty"`    // big: result bytes; slow, hold: ms (hold 0: until ctx ends); shutdown: its ctx, ms
	T    int       `json:"t,omitempty"`    // a nested call's timeout, ms
	St   int       `json:"st,omitempty"`   // a notification's stream
	Sq   int       `json:"sq,omitempty"`   // and its place in it
	Pad  string    `json:"pad,omitempty"`  // bulk
	In   string    `json:"in,omitempty"`   // a notification in a batch: "batch", or "notes-batch" if all are
	Nest []simStep `json:"nest,omitempty"` // nest: requests sent back to the caller, in turn
}

func (s *simStep) String() string {
	what := "call"
	if s.Note {
		what = fmt.Sprintf("note %d/%d (%s)", s.St, s.Sq, s.via())
	}
	return fmt.Sprintf("%s %s(n=%d t=%d pad=%d nest=%d)", what, s.Kind, s.N, s.T, len(s.Pad), len(s.Nest))
}

// via says how a notification was sent: "notify", or in a batch.
func (s *simStep) via() string {
	if s.In == "" {
		return "notify"
	}
	return s.In
}

type simOpKind int

const (
	opCall simOpKind = iota
	opNotify
	opBatch
	opSleep
)

// simOp is one operation of a worker: a goroutine of one side that makes
// its operations in turn.
type simOp struct {
	kind    simOpKind
	think   time.Duration // waited before the op
	timeout time.Duration // its ctx's
	cancel  time.Duration // if > 0, its ctx is cancelled this long after the start
	step    simStep       // call, notify
	elems   []simStep     // batch
}

func (o *simOp) String() string {
	switch o.kind {
	case opBatch:
		notes := 0
		for _, e := range o.elems {
			if e.Note {
				notes++
			}
		}
		return fmt.Sprintf("batch of %d (%d notes), timeout %v cancel %v", len(o.elems), notes, o.timeout, o.cancel)
	case opSleep:
		return fmt.Sprintf("sleep %v", o.timeout)
	}
	return fmt.Sprintf("%v, timeout %v cancel %v", &o.step, o.timeout, o.cancel)
}

// simWindow is a time during which a side reads slowly (delay before each
// Read) or not at all (delay 0: Read waits for the window's end).
type simWindow struct {
	at, dur, delay time.Duration
}

func (w simWindow) String() string {
	if w.delay == 0 {
		return fmt.Sprintf("no reads %v-%v", w.at, w.at+w.dur)
	}
	return fmt.Sprintf("reads %v apart %v-%v", w.delay, w.at, w.at+w.dur)
}

type simFaultKind int

const (
	faultNone            simFaultKind = iota
	faultAbrupt                       // what carries the side's Conn is closed under it
	faultClose                        // Peer.Close, from outside
	faultShutdown                     // Peer.Shutdown, from outside
	faultHandlerClose                 // the side's handler calls Close (the other side calls "close")
	faultHandlerShutdown              // the side's handler calls Shutdown
	faultConnectClose                 // Options.OnConnect calls Close
	faultConnectShutdown              // Options.OnConnect calls Shutdown
)

var simFaultNames = [...]string{"none", "abrupt close", "Close", "Shutdown", "Close from a handler",
	"Shutdown from a handler", "Close from OnConnect", "Shutdown from OnConnect"}

// simFault is the run's one fault that ends the connection, if any.
type simFault struct {
	kind simFaultKind
	side int           // the side that ends
	at   time.Duration // faultAbrupt, faultClose, faultShutdown
	wait time.Duration // the ctx of Shutdown
}

func (f simFault) String() string {
	if f.kind == faultNone {
		return "no fault"
	}
	return fmt.Sprintf("%s on side %c at %v (wait %v)", simFaultNames[f.kind], 'a'+f.side, f.at, f.wait)
}

// simSide is the plan of one side.
type simSide struct {
	opts      jsonrpc.Options // the limits; Handler, OnConnect and the rest are the run's
	intercept bool            // a pass-through Interceptor
	workers   [][]simOp
	pauses    []simWindow // the side's Conn is not read, or read slowly
}

// simPlan is a whole run.
type simPlan struct {
	seed      uint64
	transport simTransport
	cancel    bool          // both sides speak LSPCancel
	ping      time.Duration // ws keepalive interval; 0: the default
	sides     [2]simSide
	fault     simFault
	flood     bool // see flood

	// maxMsg is the largest message the plan makes, a batch's reply array
	// aside (see invariant 2); maxCharge the most one inbound message is
	// charged (its bytes and msgOverhead per element); maxElem the largest
	// reply of one element of a batch.
	maxMsg, maxCharge, maxElem int
	ops                        int
}

// describe writes the plan, op by op, for a human replaying it.
func (p *simPlan) describe(w io.Writer) {
	fmt.Fprintf(w, "seed %d: %v, cancel dialect %v, ws ping %v, %v, flood %v; largest message %d B\n",
		p.seed, p.transport, p.cancel, p.ping, p.fault, p.flood, p.maxMsg)
	for s, sd := range p.sides {
		o := sd.opts
		fmt.Fprintf(w, "side %c: MaxConcurrent %d, MaxQueued %d, MaxQueuedBytes %d, MaxOutboundBytes %d, BatchConcurrency %d, "+
			"DrainTimeout %v, WriteTimeout %v, ConcurrentNotifications %v, interceptor %v; pauses %v\n",
			'a'+s, o.MaxConcurrent, o.MaxQueued, o.MaxQueuedBytes, o.MaxOutboundBytes, o.BatchConcurrency,
			o.DrainTimeout, o.WriteTimeout, o.ConcurrentNotifications, sd.intercept, sd.pauses)
		for wk, ops := range sd.workers {
			for i := range ops {
				fmt.Fprintf(w, "  worker %d op %d: think %v, %v\n", wk, i, ops[i].think, &ops[i])
				for j := range ops[i].elems {
					fmt.Fprintf(w, "      %v\n", &ops[i].elems[j])
				}
			}
		}
	}
}

// simEnvelope is what a message's envelope adds to its params or result:
// "jsonrpc", the id and the method, generously.
const simEnvelope = 160

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
	p.cancel = g.r.IntN(2) == 0
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
	o.ConcurrentNotifications = g.chance(10)
	s.intercept = g.chance(20)
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
		if g.p.cancel && g.chance(30) {
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
	g.p.maxCharge = max(g.p.maxCharge, n+256*len(steps)) // msgOverhead per element
}

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
