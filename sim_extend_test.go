package jsonrpc_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/peerwire/jsonrpc"
)

// The schedules added for issue 28, drawn after every draw of the plans
// before them (see simGenerate), so that the seeds reported before still
// replay the same operations:
//
//   - progress in both directions (a third of the plans): LSP's or MCP's
//     dialect on both sides, calls made with WithProgress (and
//     WithPartialResults in LSP's) whose handlers report, sometimes with a
//     large member beside each value, and, in LSP's dialect, handlers
//     that start progress of their own with StartProgress, so that two
//     Peers of this package make tokens at once (invariant P: every value
//     reaches the function of the call it belongs to, all and in order
//     before the call returns; progress a handler started reaches the
//     other side's Handler, as a stream of notifications of invariant 3,
//     and never a call's function);
//   - operations whose ctx has ended before they are made (one in twenty):
//     each must fail, and its request must never reach the other side
//     (invariant E);
//   - hoarding plans (one in eight), each made so that bytes no counter
//     counts would show in the live heap (invariant "2 heap"): Notifies
//     withdrawn behind a side that does not read; batches of a
//     notification and a call with large params, the notifications held
//     behind one that waits for a reply; progress values beside a large
//     member, the caller's function busy; and, over stdio and WebSocket, a
//     16 KiB message cap on both sides with batches whose replies do not
//     fit in one array, notifications over the receiver's cap (a smaller
//     one than the sender's) sent while calls wait, and refusals while the
//     receiver shuts down (invariant A: every call of these is answered
//     while the connection lives).

// extend draws the schedules above.
func (g *simGen) extend() {
	p := g.p
	if g.chance(33) {
		p.progress = jsonrpc.LSPProgress
		if g.chance(33) {
			p.progress = jsonrpc.MCPProgress
		}
		for s := range p.sides {
			for _, w := range p.sides[s].workers {
				for i := range w {
					g.progressOp(&w[i])
				}
			}
		}
	}
	for s := range p.sides {
		for _, w := range p.sides[s].workers {
			for i := range w {
				g.preEnded(&w[i])
			}
		}
	}
	if !p.flood && g.chance(12) {
		g.hoard()
	}
}

// progressOp turns some calls into calls with progress ("prog"), and in
// LSP's dialect some into calls whose handler starts progress of its own
// ("own").
func (g *simGen) progressOp(o *simOp) {
	if o.kind != opCall || o.step.Kind == "close" || o.step.Kind == "shutdown" {
		return
	}
	switch x := g.r.IntN(100); {
	case x < 25:
		o.step = simStep{Kind: "prog", Tok: fmt.Sprintf("tok%x", g.r.Uint32()), N: g.between(1, 20), Pad: g.pad(1024)}
		if g.chance(30) {
			o.step.Sib = g.between(1, 8) << 10
		}
		o.prog = true
		if g.chance(30) {
			o.slowFn = g.ms(1, 20)
		}
	case x < 35 && g.p.progress.Create != "":
		o.step = simStep{Kind: "own", Tok: fmt.Sprintf("own%x", g.r.Uint32()), N: g.between(1, 10), St: g.stream()}
	default:
		return
	}
	g.sized([]simStep{o.step})
	g.progSized(&o.step)
}

// progSized accounts for the progress notifications of a "prog" call.
func (g *simGen) progSized(st *simStep) {
	if st.Kind == "prog" {
		g.p.maxMsg = max(g.p.maxMsg, st.Sib+len(st.Tok)+simEnvelope)
	}
}

// preEnded makes one operation in twenty one whose ctx has ended before
// it is made.
func (g *simGen) preEnded(o *simOp) {
	if o.kind == opSleep || o.step.Kind == "close" || o.step.Kind == "shutdown" || !g.chance(5) {
		return
	}
	o.pre = true
	o.step.Pre = true
	for i := range o.elems {
		o.elems[i].Pre = true
	}
}

// hoard replaces the plan's operations with one of the hoarding schedules:
// one side (s) sends, the other (r) mostly serves, with no fault unless
// the schedule makes one.
func (g *simGen) hoard() {
	p := g.p
	s := g.r.IntN(2)
	r := 1 - s
	p.fault = simFault{}
	p.maxMsg, p.maxCharge, p.maxElem, p.ops = 0, 0, 0, 0
	for i := range p.sides {
		p.sides[i].workers, p.sides[i].pauses = nil, nil
	}
	ro := &p.sides[r].opts
	ro.MaxConcurrent, ro.MaxQueuedBytes, ro.MaxOutboundBytes = 2, 32<<10, 32<<10
	ro.ConcurrentNotifications = false
	kinds := []string{"withdraw", "mixed batches", "progress siblings", "limits"}
	p.hoard = kinds[g.r.IntN(len(kinds))]
	if p.hoard == "limits" && p.transport == simPipe { // a Pipe has no limit
		p.hoard = "withdraw"
	}
	var workers [][]simOp
	switch p.hoard {
	case "withdraw":
		p.msgCap = 0
		p.sides[r].pauses = []simWindow{{at: 0, dur: g.ms(1000, 2000)}}
		p.sides[s].opts.MaxOutboundBytes = 256 << 10 // room for a few: they come and go
		workers = [][]simOp{g.withdrawOps()}
	case "mixed batches":
		p.msgCap = 0
		ro.MaxQueuedBytes = 512 << 10 // room for the calls, 128-160 KiB each
		workers = [][]simOp{g.mixedBatchOps()}
	case "progress siblings":
		p.msgCap = 0
		p.progress = jsonrpc.LSPProgress
		p.sides[s].opts.MaxQueuedBytes = 64 << 10 // the progress budget: the values fit, their siblings do not
		workers = [][]simOp{g.siblingOps()}
	case "limits":
		workers = g.limitOps(s, r)
	}
	p.sides[s].workers = workers
	for _, w := range workers {
		p.ops += len(w)
		for i := range w {
			if w[i].kind == opBatch {
				g.sized(w[i].elems)
				for _, e := range w[i].elems {
					g.reply(e)
				}
			} else {
				g.sized([]simStep{w[i].step})
				g.reply(w[i].step)
				g.progSized(&w[i].step)
			}
		}
	}
}

// withdrawOps: Notifies of 56-64 KiB with a ctx of 1-4 ms each, to a side
// that does not read for a second or two: most are withdrawn from the
// send queue when their ctx ends.
func (g *simGen) withdrawOps() []simOp {
	stream := g.stream()
	var ops []simOp
	for i := range g.between(300, 400) {
		st := simStep{Kind: "echo", Note: true, St: stream, Sq: i, Pad: strings.Repeat("w", g.between(56, 64)<<10)}
		ops = append(ops, simOp{kind: opNotify, timeout: g.ms(1, 4), step: st})
	}
	return ops
}

// mixedBatchOps: batches of a notification and a call with 128-160 KiB
// of params; the first notification calls the sender back and waits 6 s
// for the reply, so that the calls behind it run while the later
// notifications wait for their turn.
func (g *simGen) mixedBatchOps() []simOp {
	stream := g.stream()
	var ops []simOp
	for i := range g.between(140, 180) {
		note := simStep{Kind: "echo", Note: true, St: stream, Sq: i, In: "batch"}
		if i == 0 {
			note.Kind = "nest"
			note.Nest = []simStep{{Kind: "hold", N: 6000, T: 8000}}
		}
		call := simStep{Kind: "echo", Tok: fmt.Sprintf("tok%x", g.r.Uint32()), Pad: strings.Repeat("m", g.between(128, 160)<<10)}
		ops = append(ops, simOp{kind: opBatch, timeout: 5 * time.Second, elems: []simStep{note, call}})
	}
	return ops
}

// siblingOps: calls with progress whose handler reports 120-160 values,
// each beside a member of 128-160 KiB, while the caller's function takes
// its time over the first.
func (g *simGen) siblingOps() []simOp {
	var ops []simOp
	for range g.between(1, 2) {
		st := simStep{Kind: "prog", Tok: fmt.Sprintf("tok%x", g.r.Uint32()), N: g.between(120, 160), Sib: g.between(128, 160) << 10}
		ops = append(ops, simOp{kind: opCall, timeout: 10 * time.Second, step: st, prog: true, slowFn: g.ms(300, 600)})
	}
	return ops
}

// limitOps: a 16 KiB cap on both sides (sometimes 48 KiB on the sender's),
// batches of 120-200 calls whose replies do not fit in one array, and
// with the larger cap notifications too large for the receiver sent while
// calls wait; sometimes the receiver shuts down while a call holds it, so
// that the batches after get refusals in arrays over the cap.
func (g *simGen) limitOps(s, r int) [][]simOp {
	p := g.p
	p.msgCap = 16 << 10
	asym := g.chance(50)
	if asym {
		p.caps[s] = 48 << 10
	}
	var main []simOp
	stream, seq := g.stream(), 0
	for range g.between(3, 6) {
		elems := make([]simStep, g.between(120, 200))
		for i := range elems {
			elems[i] = simStep{Kind: "big", N: g.between(64, 100)}
		}
		main = append(main, simOp{kind: opBatch, think: g.ms(0, 50), timeout: 5 * time.Second, elems: elems, answer: true})
		if asym {
			big := simStep{Kind: "echo", Note: true, St: stream, Sq: seq, Pad: strings.Repeat("o", g.between(20, 30)<<10)}
			seq++
			main = append(main,
				simOp{kind: opNotify, timeout: time.Second, step: big},
				simOp{kind: opCall, timeout: 5 * time.Second, step: simStep{Kind: "slow", N: g.between(50, 200)}, answer: true})
		}
	}
	workers := [][]simOp{main}
	if g.chance(50) {
		// The receiver shuts down 300-600 ms in, waiting for a call that
		// holds it 1.5 s; the batches after get refusals.
		p.fault = simFault{kind: faultShutdown, side: r, at: g.ms(300, 600), wait: 3 * time.Second}
		workers = append(workers, []simOp{{kind: opCall, timeout: 3 * time.Second, step: simStep{Kind: "hold", N: 1500}}})
		for i := range main {
			main[i].think += g.ms(100, 200)
		}
	}
	return workers
}

// overRemoteCap reports whether the request st, sent by side s alone, is
// longer than the other side's message cap: that side skips it unread.
func (p *simPlan) overRemoteCap(s int, st *simStep) bool {
	c := p.capOf(1 - s)
	if c == 0 {
		return false
	}
	b, _ := json.Marshal(st)
	return len(b)+simEnvelope > c
}

// capOf is side s's message cap: its own, or the plan's.
func (p *simPlan) capOf(s int) int {
	if p.caps[s] > 0 {
		return p.caps[s]
	}
	return p.msgCap
}
