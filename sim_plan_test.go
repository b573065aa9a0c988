package jsonrpc_test

import (
	"fmt"
	"io"
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
	Pre  bool      `json:"pre,omitempty"`  // its caller's ctx ended before it was made: it must never arrive
	Sib  int       `json:"sib,omitempty"`  // prog: bytes of a member beside each progress value (LSP)
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

	pre    bool          // its ctx has ended before it is made: nothing may be sent
	prog   bool          // a call made with WithProgress (and WithPartialResults in LSP's dialect)
	slowFn time.Duration // the progress function takes this long over the first value
	answer bool          // every call of it must be answered while the connection lives (invariant A)
}

func (o *simOp) String() string {
	pre := ""
	if o.pre {
		pre = ", ctx ended before"
	}
	if o.prog {
		pre += fmt.Sprintf(", with progress (function %v)", o.slowFn)
	}
	switch o.kind {
	case opBatch:
		notes := 0
		for _, e := range o.elems {
			if e.Note {
				notes++
			}
		}
		return fmt.Sprintf("batch of %d (%d notes), timeout %v cancel %v%s", len(o.elems), notes, o.timeout, o.cancel, pre)
	case opSleep:
		return fmt.Sprintf("sleep %v", o.timeout)
	}
	return fmt.Sprintf("%v, timeout %v cancel %v%s", &o.step, o.timeout, o.cancel, pre)
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
	delaySlow bool            // which holds back outbound "slow" calls 3 ms (an element of a batch goes later)
	serve     bool            // run by jsonrpc.Serve, not NewPeer
	workers   [][]simOp
	pauses    []simWindow // the side's Conn is not read, or read slowly
}

// simPlan is a whole run.
type simPlan struct {
	seed      uint64
	transport simTransport
	cancel    *jsonrpc.CancelDialect // both sides speak it; nil: none
	msgCap    int                    // the transport's MaxMessageSize; 0: the default
	ping      time.Duration          // ws keepalive interval; 0: the default
	sides     [2]simSide
	fault     simFault
	flood     bool // see flood

	progress *jsonrpc.ProgressDialect // both sides speak it; nil: none
	caps     [2]int                   // per side, a MaxMessageSize other than msgCap (0: msgCap)
	hoard    string                   // a plan made to hold bytes no counter counts, if not "" (see hoard)

	// maxMsg is the largest message the plan makes, a batch's reply array
	// aside (see invariant 2); maxCharge the most one inbound message is
	// charged (its bytes and msgOverhead per element); maxElem the largest
	// reply of one element of a batch.
	maxMsg, maxCharge, maxElem int
	ops                        int
	maxBatch                   int // the most elements of one batch
}

// describe writes the plan, op by op, for a human replaying it.
func (p *simPlan) describe(w io.Writer) {
	dialect := "none"
	if p.cancel != nil {
		dialect = p.cancel.Method
	}
	progress := "none"
	if p.progress != nil {
		progress = p.progress.Method
	}
	fmt.Fprintf(w, "seed %d: %v, cancel dialect %s, progress dialect %s, message cap %d (sides %v), ws ping %v, %v, flood %v, hoard %q; largest message %d B\n",
		p.seed, p.transport, dialect, progress, p.msgCap, p.caps, p.ping, p.fault, p.flood, p.hoard, p.maxMsg)
	for s, sd := range p.sides {
		o := sd.opts
		fmt.Fprintf(w, "side %c: MaxConcurrent %d, MaxQueued %d, MaxQueuedBytes %d, MaxOutboundBytes %d, BatchConcurrency %d, "+
			"MaxPending %d, DrainTimeout %v, WriteTimeout %v, ConcurrentNotifications %v, interceptor %v (delaying %v), Serve %v; pauses %v\n",
			'a'+s, o.MaxConcurrent, o.MaxQueued, o.MaxQueuedBytes, o.MaxOutboundBytes, o.BatchConcurrency,
			o.MaxPending, o.DrainTimeout, o.WriteTimeout, o.ConcurrentNotifications, sd.intercept, sd.delaySlow, sd.serve, sd.pauses)
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
