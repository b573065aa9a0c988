package jsonrpc_test

// TestSim is a seeded, randomized simulation of two Peers under load and
// faults, in the spirit of FoundationDB's and TigerBeetle's simulation
// testing: each run draws from its seed a whole plan (sim_plan_test.go,
// sim_gen_test.go), executes it (sim_run_test.go, sim_work_test.go,
// sim_handler_test.go, sim_conn_test.go) and holds it to invariants
// (sim_check_test.go, sim_streams_test.go).
//
// What a plan holds, for each of the two sides:
//
//   - small budgets: MaxConcurrent 2-8, MaxQueued 2-32, MaxQueuedBytes and
//     MaxOutboundBytes 16-64 KiB, BatchConcurrency 1-4; DrainTimeout the
//     default, short or off; sometimes WriteTimeout 2 s, a small
//     MaxPending, concurrent notifications, jsonrpc.Serve instead of
//     NewPeer, an Interceptor (which may hold outbound "slow" requests
//     back 3 ms, so that a batch goes out in rounds); LSPCancel or
//     MCPCancel on both sides, or none;
//   - 1-4 workers making 40-120 operations in turn (or a few, or none:
//     a side that mostly serves): calls, notifications, batches (mixed,
//     notifications only, big results only), each with a ctx deadline of
//     2 ms to 2 s and a fifth cancelled early. Each request says what the
//     other side's handler does: answer at once, answer big, be slow,
//     hold until its ctx ends (or for a while), fail, or call and notify
//     the caller back (nested, twice at most);
//   - up to two windows in which its Conn is not read, or read slowly.
//
// For the run: its transport, from the seed (simTransportOf): jsonrpc.Pipe,
// and stdio (line and header framing) over net.Pipe, in a testing/synctest
// bubble (fake time: fast, and as deterministic as goroutines allow);
// stdio (both framings) over loopback TCP, and ws over loopback TCP
// (httptest), in real time, sometimes with a MaxMessageSize of 16-48 KiB
// on both ends, and over ws a keepalive every second or so. And at most
// one fault that ends the connection: the carrier closed under a side's
// Conn, Close or Shutdown from outside, from a handler, or from
// Options.OnConnect. One plan in ten is a flood instead: one side's only
// worker sends notifications behind one whose handler holds until the
// end, the other side only serves (so it pushes back), and the flooding
// side ends. Beside these (sim_extend_test.go): progress in LSP's or
// MCP's dialect on both sides in a third of the plans (calls with
// progress functions, values beside large members, handlers that start
// progress of their own while the other side's calls await theirs), one
// operation in twenty made with a ctx that has already ended, and one
// plan in eight that hoards: Notifies withdrawn behind a side that does
// not read, batches of a notification and a large call with the
// notifications held, progress values beside 128-160 KiB members with the
// caller's function busy, or a 16 KiB cap with batch replies that do not
// fit one array, notifications over the receiver's (smaller) cap while
// calls wait, and refusals while the receiver shuts down.
//
// The invariants, each checked during the run or after it:
//
//  1. Every NewPeer, Call, Notify, Batch, Close and Shutdown, from workers
//     and from handlers, returns within the bound of its ctx's end, or of
//     its start when it has no ctx. The bound is -sim.bound (2 s) in real
//     time, -sim.fakebound (250 ms) in a bubble, where only timers take
//     time: it covers the library's own (100 ms at most, eofGrace). The
//     worst overshoot is in the run's summary (-v).
//  2. Each side's retained memory, sampled every millisecond and on every
//     Read and Write (jsonrpc.RetainedBytes, sim_export_test.go), stays
//     within what the README's limits table allows: inbound work within
//     2 × MaxQueuedBytes (or one message alone, as allocated), plus the
//     replies of the batch elements running when the budget fills (one
//     per slot) and the answers of those refused; unwritten messages
//     within MaxOutboundBytes or one message alone, where a batch's reply
//     array may be as long as MaxQueuedBytes plus BatchConcurrency
//     elements, no longer; control replies within 1 MiB plus one message.
//     "One message" is the largest the plan makes, a batch's reply array
//     aside. And "2 heap", through the runtime, not the Peers' counters
//     (sim_heap_test.go): the live heap after a collection, every 100 ms
//     and once the workers are done, grows by no more than the budgets of
//     both sides plus one largest message per goroutine that may hold one
//     and 6 MiB of slack, so that bytes no counter counts are seen.
//  3. Every notification that Notify or Batch reported written (nil, and
//     no call of its batch refused) is handled exactly once, and in order
//     within its stream (one worker's, or one nesting handler's), unless
//     the connection ended; duplicates and reordering fail always.
//  4. Once one side ends, the other ends within its DrainTimeout, its
//     plan's pauses and the bound (and 2 s more over ws, whose keepalive
//     finds a gone side "within about 2 s"), even while it pushes back;
//     not over stdio on a plain stream, where the README promises only
//     that it notices when it next reads or writes. At the teardown, Wait
//     returns within the bound of Close, the AfterFunc runs, and every
//     handler has returned and seen its ctx end by the time Wait returns.
//  5. Nothing leaks: a synctest bubble fails if a goroutine outlives the
//     run; in real time, goleak checks after each run; TestMain checks the
//     whole package.
//
// Beside them: P, every progress value reaches the function of its own
// call, all of them in order before a call that succeeds returns, and
// progress a handler started reaches the other side's Handler (as a
// stream of invariant 3), never a call's function; E, an operation whose
// ctx ended before it was made fails and its request never reaches the
// other side; A, in the hoarding plans with a cap, every call is
// answered (not left to its ctx) while the connection lives; R, every
// call gets its own result; U, no error outside the
// documented ones (a ctx's, ErrClosed, CodeOverloaded, CodeShuttingDown,
// the "fail" method's, ErrTooManyPending, and with a message cap
// ErrMessageTooLarge or the Internal error that replaces a reply too
// large), and a connection that ends with no fault in the
// plan ends with ErrOverloaded, ErrSlowConsumer, ErrWriteTimeout or (when
// the plan pings) ws.ErrKeepalive.
//
// Running it:
//
//	go test -race -run TestSim .                          # about 30 s, fresh seeds
//	go test -race -run TestSim -sim.duration=10m .        # longer
//	go test -race -run TestSim -sim.runs=500 -sim.duration=1h .
//	go test -race -run TestSim -sim.transport=ws .        # one transport
//	go test -race -run TestSim -sim.seed=N -v .           # replay seed N, with its summary
//	go test -race -run TestSim -sim.seed=N -sim.plan -v . # and its plan, op by op
//	go test -race -run TestSim -sim.ignore=4,U .          # known failures reported, not failing
//
// A failing run reports its seed and the line that replays it: the same
// plan (operations, faults, parameters), though not the same goroutine
// schedule. A run that hangs ends the test binary: in a bubble with
// synctest's deadlock panic, under the subtest that names the seed; in
// real time after -sim.hang, with a panic that prints the seed, its
// replay line and every goroutine's stack.

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

var (
	simSeed      = flag.Uint64("sim.seed", 0, "replay this seed only")
	simRuns      = flag.Int("sim.runs", 0, "stop after this many runs (0: as many as -sim.duration allows)")
	simDuration  = flag.Duration("sim.duration", 30*time.Second, "start no run after this much time (-short: a tenth)")
	simBound     = flag.Duration("sim.bound", 2*time.Second, "the slack of the timing invariants, in real time")
	simFakeBound = flag.Duration("sim.fakebound", 250*time.Millisecond, "the slack of the timing invariants, in a synctest bubble")
	simHang      = flag.Duration("sim.hang", 2*time.Minute, "real time after which a run is taken for hung")
	simOnly      = flag.String("sim.transport", "", "run only seeds of this transport (pipe, stdio-line-netpipe, ..., ws)")
	simIgnore    = flag.String("sim.ignore", "", "comma-separated invariants to report without failing: 1, 2, 2heap, 3order, 3lost, 3twice, 4, 5, A, E, P, Plost, Pmisrouted, Porder, R, U")
	simMaxFail   = flag.Int("sim.maxfail", 10, "stop after this many failed runs")
	simShowPlan  = flag.Bool("sim.plan", false, "log each run's plan, op by op (with -sim.seed)")
)

func TestSim(t *testing.T) {
	if *simSeed != 0 {
		simOne(t, *simSeed)
		return
	}
	budget := *simDuration
	if testing.Short() {
		budget /= 10
	}
	only := simTransports
	for tr := range simTransports {
		if tr.String() == *simOnly {
			only = tr
		}
	}
	if *simOnly != "" && only == simTransports {
		t.Fatalf("unknown -sim.transport %q", *simOnly)
	}
	base := uint64(time.Now().UnixNano()) &^ 0xffff
	t.Logf("seeds from %d", base)
	start := time.Now()
	runs, failed := 0, 0
	for seed := base; time.Since(start) < budget && (*simRuns == 0 || runs < *simRuns); seed++ {
		if only != simTransports && simTransportOf(seed) != only {
			continue
		}
		runs++
		if !simOne(t, seed) {
			failed++
		}
		if failed >= *simMaxFail {
			t.Logf("stopping after %d failed runs", failed)
			break
		}
	}
	t.Logf("%d runs in %v, %d failed", runs, time.Since(start).Round(time.Millisecond), failed)
}

// simOne runs seed as a subtest and reports whether it passed.
func simOne(t *testing.T, seed uint64) bool {
	plan := simGenerate(seed)
	return t.Run(fmt.Sprintf("seed=%d-%v", seed, plan.transport), func(t *testing.T) {
		hung := time.AfterFunc(*simHang, func() { simHung(plan) })
		defer hung.Stop()
		if *simShowPlan {
			var b strings.Builder
			plan.describe(&b)
			t.Log(b.String())
		}
		var res simResult
		if plan.transport.fakeTime() {
			synctest.Test(t, func(*testing.T) { res = simExecute(plan, *simFakeBound) })
		} else {
			current := goleak.IgnoreCurrent()
			res = simExecute(plan, *simBound)
			if err := goleak.Find(current); err != nil {
				res.violations = append(res.violations, simViolation{"5", err.Error()})
			}
		}
		simReport(t, plan, res)
	})
}

// simReport logs a run's summary, and fails the test with its violations
// but those -sim.ignore names.
func simReport(t *testing.T, plan *simPlan, res simResult) {
	t.Log(res.summary)
	var failing, ignored []string
	for _, v := range res.violations {
		if slices.Contains(strings.Split(*simIgnore, ","), v.key()) {
			ignored = append(ignored, v.String())
		} else {
			failing = append(failing, v.String())
		}
	}
	if len(ignored) > 0 {
		t.Logf("ignored (-sim.ignore):\n\t%s", strings.Join(ignored, "\n\t"))
	}
	if len(failing) > 0 {
		t.Fatalf("seed %d (%v, %v):\n\t%s\nreplay: go test -race -run TestSim -sim.seed=%d .",
			plan.seed, plan.transport, plan.fault, strings.Join(failing, "\n\t"), plan.seed)
	}
}

// simHung ends the test binary when a run has outlived -sim.hang of real
// time, saying which and where every goroutine is.
func simHung(plan *simPlan) {
	buf := make([]byte, 4<<20)
	fmt.Fprintf(os.Stderr, "sim: seed %d (%v) still runs after %v: hung\nreplay: go test -race -run TestSim -sim.seed=%d .\n%s",
		plan.seed, plan.transport, *simHang, plan.seed, buf[:runtime.Stack(buf, true)])
	panic(fmt.Sprintf("sim: seed %d hung", plan.seed))
}
