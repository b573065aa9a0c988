package jsonrpc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// One simulation run: two Peers on a carrier, their workers, the plan's
// fault, then the checks that need the run to be over (see sim_test.go).

// simRunCap bounds a run's operations: when it passes, every operation's
// ctx ends and the workers stop.
const simRunCap = 20 * time.Second

// simStall is how long a run may go without a handler starting or
// returning while notifications reported written are still unhandled.
const simStall = 3 * time.Second

// simRun is one run of a plan.
type simRun struct {
	plan    *simPlan
	c       *simChecker
	bound   time.Duration
	start   time.Time
	ctx     context.Context // every operation's ctx derives from it
	cancel  context.CancelFunc
	carrier *simCarrier
	peers   [2]atomic.Pointer[jsonrpc.Peer]
	started [2]chan struct{} // closed when the side's NewPeer has returned, or Serve's OnConnect
	served  [2]chan error    // what Serve returned, for a side it runs
	doneCh  [2]chan struct{} // closed when the side's Peer has ended
	bg      sync.WaitGroup   // the run's own goroutines

	heapBase, heapMax int64 // invariant "2 heap": the live heap at the start, and the growth allowed

	mu       sync.Mutex
	doneAt   [2]time.Time
	afterAt  [2]time.Time // when the side's AfterFunc ran
	early    [2]bool      // ended before the teardown
	tearing  bool
	endWatch sync.WaitGroup
	fired    bool // the plan's fault happened
}

// simResult is what a run reports.
type simResult struct {
	violations []simViolation
	summary    string
}

// simExecute runs plan, holding timings to bound.
func simExecute(plan *simPlan, bound time.Duration) simResult {
	rn := &simRun{plan: plan, c: newSimChecker(plan, bound), bound: bound}
	rn.ctx, rn.cancel = context.WithTimeout(context.Background(), simRunCap)
	defer rn.cancel()
	car, err := simConnect(plan.transport, plan.ping, [2]int{plan.capOf(0), plan.capOf(1)})
	if err != nil {
		return simResult{violations: []simViolation{{"setup", err.Error()}}}
	}
	rn.carrier = car
	rn.heapStart()
	rn.start = time.Now()
	for s := range 2 {
		rn.started[s], rn.doneCh[s] = make(chan struct{}), make(chan struct{})
	}
	for s := range 2 {
		rn.startPeer(s)
	}
	stop := rn.background()
	rn.work()
	rn.sampleHeap("after the workers")
	rn.settle()
	causes := rn.teardown()
	stop()
	rn.bg.Wait()
	car.cleanup()
	rn.checkCauses(causes)
	return simResult{
		violations: rn.c.failed(),
		summary: fmt.Sprintf("%v, %s, %d ops; ends: a %v, b %v; %s", time.Since(rn.start).Round(time.Millisecond),
			rn.faultString(), plan.ops, causes[0], causes[1], rn.c.summary()),
	}
}

func (rn *simRun) faultString() string {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	f := rn.plan.fault
	switch f.kind {
	case faultAbrupt, faultClose, faultShutdown:
		if !rn.fired {
			return f.String() + ", not reached"
		}
	}
	return f.String()
}

// startPeer starts side s's Peer.
func (rn *simRun) startPeer(s int) {
	o := rn.plan.sides[s].opts
	o.Handler = rn.handler(s)
	o.OnConnect = func(p *jsonrpc.Peer) { rn.connected(s, p) }
	o.Cancel = rn.plan.cancel
	o.Progress = rn.plan.progress
	if sd := rn.plan.sides[s]; sd.intercept {
		o.Interceptors = []jsonrpc.Interceptor{func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
			// Calls only: a Batch's notifications held back by an
			// interceptor go out after the later ones (see Peer.Batch).
			if sd.delaySlow && info.Outbound && info.Method == "slow" && !info.ID.IsZero() {
				simSleep(ctx, 3*time.Millisecond) // past batchGather: a round of its own
			}
			return next(ctx)
		}}
	}
	conn := simWrap(rn, s, rn.carrier.conns[s], rn.carrier.drop[s])
	if !rn.plan.sides[s].serve {
		r := rn.c.begin(fmt.Sprintf("side %c NewPeer", 'a'+s), nil)
		jsonrpc.NewPeer(conn, o)
		rn.c.end(r)
		close(rn.started[s])
		return
	}
	// Serve reads on its own goroutine, here one of the run's, and
	// returns Wait's result once the Peer has ended (see teardown).
	r := rn.c.begin(fmt.Sprintf("side %c Serve until OnConnect returns", 'a'+s), nil)
	rn.served[s] = make(chan error, 1)
	go func() { rn.served[s] <- jsonrpc.Serve(conn, o) }()
	<-rn.started[s]
	rn.c.end(r)
}

// connected is side s's OnConnect: it watches the Peer's end, and makes
// the plan's fault if it is Close or Shutdown from OnConnect.
func (rn *simRun) connected(s int, p *jsonrpc.Peer) {
	rn.peers[s].Store(p)
	p.AfterFunc(func() {
		rn.mu.Lock()
		rn.afterAt[s] = time.Now()
		rn.mu.Unlock()
	})
	rn.bg.Add(1)
	go func() {
		defer rn.bg.Done()
		<-p.Done()
		rn.ended(s)
	}()
	if rn.plan.sides[s].serve {
		defer close(rn.started[s])
	}
	f := rn.plan.fault
	if f.side != s {
		return
	}
	switch f.kind {
	case faultConnectClose:
		rn.guarded(fmt.Sprintf("side %c Close from OnConnect", 'a'+s), nil, func() { p.Close() })
	case faultConnectShutdown:
		ctx, cancel := context.WithTimeout(context.Background(), f.wait)
		defer cancel()
		rn.guarded(fmt.Sprintf("side %c Shutdown from OnConnect", 'a'+s), ctx, func() { p.Shutdown(ctx) })
	}
}

// guarded runs f, timed as an operation bounded by ctx, and waits for it
// no longer than invariant 1 allows, so that a Close that waits for
// NewPeer to return is reported rather than deadlocking the run.
func (rn *simRun) guarded(what string, ctx context.Context, f func()) {
	r := rn.c.begin(what, ctx)
	returned := make(chan struct{})
	rn.bg.Add(1)
	go func() {
		defer rn.bg.Done()
		f()
		rn.c.end(r)
		close(returned)
	}()
	limit := rn.bound
	if ctx != nil {
		limit += time.Until(deadlineOf(ctx))
	}
	t := time.NewTimer(limit + 100*time.Millisecond)
	defer t.Stop()
	select {
	case <-returned:
	case <-t.C:
		rn.c.watch() // reports it
	}
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// ended records that side s's Peer has ended; the first side to end
// before the teardown starts the watch of invariant 4 on the other.
func (rn *simRun) ended(s int) {
	now := time.Now()
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.doneAt[s] = now
	rn.early[s] = !rn.tearing
	close(rn.doneCh[s])
	if !rn.tearing && rn.doneAt[1-s].IsZero() && rn.plan.transport.watched() {
		rn.endWatch.Add(1)
		go rn.watchEnd(1-s, s, now)
	}
}

// watchEnd holds invariant 4: side o ends within its drain time, the time
// its plan keeps it from reading, and the bound, of side s's end at t (or
// of its own start, if later: side a's OnConnect may end it before side b
// starts).
func (rn *simRun) watchEnd(o, s int, t time.Time) {
	defer rn.endWatch.Done()
	<-rn.started[o]
	from := time.Since(rn.start) // t, or o's start
	limit := rn.plan.pausedAfter(o, from) + simDrain(rn.plan.sides[o].opts) + rn.bound
	if rn.plan.transport == simWS {
		limit += simWSNotice
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-rn.doneCh[o]:
	case <-timer.C:
		rn.c.fail("4", "side %c ended at %v; side %c had not ended at %v (drain, pauses and bound)",
			'a'+s, t.Sub(rn.start).Round(time.Millisecond), 'a'+o, (from + limit).Round(time.Millisecond))
	}
}

// simWSNotice is what a ws Peer that pushes back may take beyond the bound
// to see its remote side go: its keepalive probes by writing a ping every
// second meanwhile, and a write fails only once the remote side's reset
// has come back, so the README says "within about 2 s".
const simWSNotice = 2 * time.Second

// simDrain is how long a Peer may drain after its remote's clean end.
func simDrain(o jsonrpc.Options) time.Duration {
	switch {
	case o.DrainTimeout == 0:
		return time.Second
	case o.DrainTimeout < 0:
		return 0
	}
	return o.DrainTimeout
}

// teardown closes both Peers, once invariant 4's watch of an earlier end
// is over, and checks that each ends: Wait returns, the AfterFunc ran,
// every handler's ctx ended. It returns what Wait returned.
func (rn *simRun) teardown() (causes [2]error) {
	rn.mu.Lock()
	rn.tearing = true
	rn.mu.Unlock()
	rn.endWatch.Wait()
	for s := range 2 {
		p := rn.peers[s].Load()
		r := rn.c.begin(fmt.Sprintf("side %c Close (teardown)", 'a'+s), nil)
		p.Close()
		rn.c.end(r)
	}
	for s := range 2 {
		p := rn.peers[s].Load()
		waited := make(chan error, 1)
		go func() { waited <- p.Wait() }()
		t := time.NewTimer(rn.bound)
		select {
		case causes[s] = <-waited:
		case <-t.C:
			rn.c.fail("4", "side %c: Wait has not returned %v after Close", 'a'+s, rn.bound)
			causes[s] = errors.New("(Wait did not return)")
		}
		t.Stop()
		if rn.served[s] != nil {
			rn.checkServe(s, causes[s])
		}
	}
	deadline := time.Now().Add(rn.bound)
	for s := range 2 {
		// Done is closed once Wait has returned: ended runs now.
		for !(rn.hasEnded(s) && rn.afterFuncRan(s)) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		rn.mu.Lock()
		after, done := rn.afterAt[s], rn.doneAt[s]
		rn.mu.Unlock()
		switch {
		case done.IsZero():
			rn.c.fail("4", "side %c: Done is not closed %v after Close", 'a'+s, rn.bound)
			continue
		case after.IsZero():
			rn.c.fail("4", "side %c: AfterFunc has not run %v after Done", 'a'+s, rn.bound)
		case after.Sub(done) > rn.bound:
			rn.c.fail("4", "side %c: AfterFunc ran %v after Done", 'a'+s, after.Sub(done))
		}
		rn.c.handlersEnded(s)
	}
	return causes
}

// checkServe: Serve returns once Wait would, with Wait's result.
func (rn *simRun) checkServe(s int, cause error) {
	t := time.NewTimer(rn.bound)
	defer t.Stop()
	select {
	case err := <-rn.served[s]:
		if err != cause {
			rn.c.fail("U", "side %c: Serve returned %v, Wait %v", 'a'+s, err, cause)
		}
	case <-t.C:
		rn.c.fail("4", "side %c: Serve has not returned %v after Wait", 'a'+s, rn.bound)
	}
}

func (rn *simRun) hasEnded(s int) bool {
	select {
	case <-rn.doneCh[s]:
		return true
	default:
		return false
	}
}

func (rn *simRun) afterFuncRan(s int) bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return !rn.afterAt[s].IsZero()
}

// checkCauses: a connection that ended before the teardown, with no fault
// in the plan, ended for a documented reason. ws.ErrKeepalive is one when
// the plan pings every second or so: a side that pushes back for longer
// than the ping timeout (its notifications' handler holding, say) answers
// no ping, and is "a silent peer".
func (rn *simRun) checkCauses(causes [2]error) {
	if rn.plan.fault.kind != faultNone || !rn.endedEarly() {
		return
	}
	for _, err := range causes {
		if errors.Is(err, jsonrpc.ErrOverloaded) || errors.Is(err, jsonrpc.ErrSlowConsumer) ||
			errors.Is(err, jsonrpc.ErrWriteTimeout) || rn.plan.ping > 0 && errors.Is(err, ws.ErrKeepalive) {
			return
		}
	}
	rn.c.fail("U", "the connection ended with no fault and no documented cause: a %v, b %v", causes[0], causes[1])
}
