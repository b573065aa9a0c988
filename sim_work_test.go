package jsonrpc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// What a simulation run does while it runs: its workers, the plan's fault
// from outside, the memory sampler and the watchdog, and the wait for the
// notifications to be handled before the teardown (sim_run_test.go).

// background starts what runs beside the workers: the memory sampler and
// the operation watchdog, every millisecond, and the plan's fault from
// outside the Peers. stop stops them.
func (rn *simRun) background() (stop func()) {
	done := make(chan struct{})
	rn.bg.Add(3)
	go func() {
		defer rn.bg.Done()
		t := time.NewTicker(simHeapEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				rn.sampleHeap(fmt.Sprintf("at %v", time.Since(rn.start).Round(time.Millisecond)))
			}
		}
	}()
	go func() {
		defer rn.bg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				rn.sample(0, nil)
				rn.sample(1, nil)
				rn.c.watch()
			}
		}
	}()
	go func() {
		defer rn.bg.Done()
		rn.outsideFault(done)
	}()
	return func() { close(done) }
}

func (rn *simRun) sample(s int, msg []byte) {
	if p := rn.peers[s].Load(); p != nil {
		rn.c.sample(s, p, msg)
	}
}

// outsideFault makes the plan's fault if it comes from outside the Peers,
// at its time, unless the run is over by then.
func (rn *simRun) outsideFault(done <-chan struct{}) {
	f := rn.plan.fault
	if f.kind != faultAbrupt && f.kind != faultClose && f.kind != faultShutdown {
		return
	}
	t := time.NewTimer(f.at - time.Since(rn.start))
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	rn.mu.Lock()
	tearing := rn.tearing
	rn.fired = !tearing
	rn.mu.Unlock()
	if tearing {
		return
	}
	p := rn.peers[f.side].Load()
	switch f.kind {
	case faultAbrupt:
		rn.carrier.abrupt[f.side]()
	case faultClose:
		r := rn.c.begin(fmt.Sprintf("side %c Close", 'a'+f.side), nil)
		p.Close()
		rn.c.end(r)
	case faultShutdown:
		ctx, cancel := context.WithTimeout(context.Background(), f.wait)
		defer cancel()
		r := rn.c.begin(fmt.Sprintf("side %c Shutdown", 'a'+f.side), ctx)
		p.Shutdown(ctx)
		rn.c.end(r)
	}
}

// work runs every worker of both sides and waits for them.
func (rn *simRun) work() {
	var wg sync.WaitGroup
	for s := range 2 {
		p := rn.peers[s].Load()
		for w, ops := range rn.plan.sides[s].workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rn.worker(s, w, p, ops)
			}()
		}
	}
	wg.Wait()
}

// worker makes ops in turn on side s's Peer p, until one finds the
// connection ended.
func (rn *simRun) worker(s, w int, p *jsonrpc.Peer, ops []simOp) {
	for i := range ops {
		op := &ops[i]
		if op.think > 0 {
			simSleep(rn.ctx, op.think)
		}
		if rn.ctx.Err() != nil {
			return
		}
		label := fmt.Sprintf("side %c worker %d op %d: %v", 'a'+s, w, i, op)
		if err := rn.do(s, p, op, label); errors.Is(err, jsonrpc.ErrClosed) {
			return
		}
	}
}

// do makes one operation.
func (rn *simRun) do(s int, p *jsonrpc.Peer, op *simOp, label string) error {
	if op.kind == opSleep {
		simSleep(rn.ctx, op.timeout)
		return nil
	}
	ctx, cancel := context.WithTimeout(rn.ctx, op.timeout)
	defer cancel()
	if op.pre {
		cancel() // ended before the operation is made (invariant E)
	}
	if op.cancel > 0 {
		t := time.AfterFunc(op.cancel, cancel)
		defer t.Stop()
	}
	var err error
	switch op.kind {
	case opCall:
		var rec *simProgress
		cctx := ctx
		if op.prog {
			cctx, rec = rn.withProgress(ctx, op, label)
		}
		err = rn.call(cctx, s, p, &op.step, label)
		if err == nil && rec != nil {
			rn.checkProgress(&op.step, rec, label)
		}
	case opNotify:
		err = rn.notify(ctx, s, p, &op.step, label)
	default:
		err = rn.batch(ctx, s, p, op.elems, label)
	}
	if op.pre {
		rn.preEndedCheck(err, label)
	}
	if op.answer {
		rn.answerCheck(ctx, err, label)
	}
	return err
}

// settle waits, while both sides live, until every notification reported
// written has been handled (invariant 3). Those still missing once no
// handler has started or returned for simStall, none running, are lost;
// while a handler runs (one holding the notifications behind it until its
// ctx ends, say) they are excused.
func (rn *simRun) settle() {
	for {
		n, some := rn.c.missing()
		if n == 0 || rn.endedEarly() || rn.ctx.Err() != nil {
			return
		}
		idle, running := rn.c.idleFor()
		switch {
		case idle <= simStall:
		case running > 0:
			rn.c.outcome("unsettled")
			return
		default:
			var held [2]string
			for s := range 2 {
				in, out, ctl := jsonrpc.RetainedBytes(rn.peers[s].Load())
				held[s] = fmt.Sprintf("%d/%d/%d", in, out, ctl)
			}
			rn.c.fail("3 lost", "%d notifications reported written were never handled (%v...), both sides alive, "+
				"no handler running or started for %v; held in/out/control: a %s, b %s",
				n, some, idle.Round(time.Millisecond), held[0], held[1])
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (rn *simRun) endedEarly() bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.early[0] || rn.early[1]
}

// simSleep waits for d or ctx's end.
func simSleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
