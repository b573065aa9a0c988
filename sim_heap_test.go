package jsonrpc_test

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"

	"github.com/peerwire/jsonrpc"
)

// Invariant 2, through the runtime ("2 heap"): what a run makes the
// process hold, read from the live heap after a collection, not from the
// Peers' own counters, so that bytes no counter counts (a message that
// stays alive because a slice of it is kept, a buffer given back to a
// budget but not let go) are seen. The heap grown since the run started
// must stay within what the budgets of both sides allow, as the README's
// limits table states them, plus the run's own working set: the messages
// that workers and running handlers hold while they make or serve them,
// and a fixed slack for transports' buffers, pools and the checker.

var simHeapProfile = flag.String("sim.heapprofile", "", "write a heap profile to this file when invariant \"2 heap\" first fails")

// simHeapEvery is how often the heap is read: a collection costs a few
// milliseconds under -race, so not every millisecond as the counters are.
const simHeapEvery = 100 * time.Millisecond

// simHeapSlack is the part of the heap bound that no budget names:
// transports' read and write buffers (up to the message cap), the
// message-buffer pool, goroutines' contexts, the checker's records.
const simHeapSlack = 6 << 20

// liveHeap collects, then returns the bytes of the heap objects that
// collection found live (runtime/metrics' /gc/heap/live:bytes): unlike
// MemStats.HeapAlloc, not what the run's goroutines allocated between the
// collection's end and the reading, which under load was megabytes.
func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// heapBound is the growth of the live heap a run of p may reach: each
// side's budgets (inbound, outbound and control, as invariant 2 holds
// them, and progress waiting for callers' functions), and one copy of the
// largest message for every goroutine that may hold one outside them (a
// worker making its request, a handler serving one, the transport reading
// one), plus simHeapSlack.
func heapBound(p *simPlan, c *simChecker) int64 {
	var n int64
	holders := 0
	for s, sd := range p.sides {
		o := sd.opts
		n += int64(c.inBound[s] + c.outBound[s] + c.ctlBound)
		if p.progress != nil {
			n += int64(o.MaxQueuedBytes)
		}
		notes := 1
		if o.ConcurrentNotifications {
			notes = o.MaxConcurrent
		}
		holders += o.MaxConcurrent + notes + len(sd.workers) + 2
	}
	return n + int64(holders*max(p.maxMsg, p.maxElem)) + simHeapSlack
}

// heapStart records the live heap at the start of a run.
func (rn *simRun) heapStart() {
	rn.heapBase = liveHeap()
	rn.heapMax = heapBound(rn.plan, rn.c)
}

// sampleHeap checks the live heap now; the first excess of a run is
// reported, the peak goes in its summary.
func (rn *simRun) sampleHeap(when string) {
	grown := liveHeap() - rn.heapBase
	rn.c.mu.Lock()
	defer rn.c.mu.Unlock()
	if grown > rn.c.peakHeap {
		rn.c.peakHeap, rn.c.peakHeapAt = grown, when
	}
	if grown <= rn.heapMax || rn.c.heapReported {
		return
	}
	rn.c.heapReported = true
	if *simHeapProfile != "" {
		if f, err := os.Create(*simHeapProfile); err == nil {
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}
	var held [2]string
	for s := range 2 {
		if p := rn.peers[s].Load(); p != nil {
			in, out, ctl := jsonrpc.RetainedBytes(p)
			held[s] = fmt.Sprintf("%d/%d/%d", in, out, ctl)
		}
	}
	rn.c.failLocked("2 heap", "%s: the live heap grew by %d B since the run started, over the bound of %d B; "+
		"the Peers' own counters say in/out/control a %s, b %s", when, grown, rn.heapMax, held[0], held[1])
}
