package jsonrpc

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
)

// TestIdlePeerHeapBudgetCatchesEagerWakeChannels: TestIdlePeerHeap's
// budget (idlePeerHeapBudget) is there to catch c9f8ad2's regression coming back,
// the three wake channels made for every Peer (2,704 bytes on c381bbe
// against 2,368). Its figure counts the read loop goroutine's g struct,
// which the runtime makes only when it has no dead one to reuse: run
// alone it is 2,368, but after any test that ended goroutines (in the
// package's suite, or with -count=2) about 1,850, and then 2,450 does not
// catch the regression (it was 2,450 then). Measured here as TestIdlePeerHeap measures, with
// the goroutine structs made beforehand, and with the three channels a
// Peer held before c9f8ad2 kept alive beside each Peer.
func TestIdlePeerHeapBudgetCatchesEagerWakeChannels(t *testing.T) {
	const n = 1000
	live := func() uint64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	var warm sync.WaitGroup
	release := make(chan struct{})
	for range 2 * n {
		warm.Go(func() { <-release })
	}
	close(release)
	warm.Wait()
	conns := make([]*idleConn, n)
	for i := range conns {
		conns[i] = newIdleConn()
	}
	mux := NewMux()
	peers := make([]*Peer, 0, n)
	wakes := make([][3]chan struct{}, 0, n)
	before := live()
	for _, c := range conns {
		p := NewPeer(c, Options{Handler: mux})
		peers = append(peers, p)
		// What c381bbe made for every Peer: the two lanes' wake
		// channels (buffers of MaxConcurrent's and 1) and the writer's.
		wakes = append(wakes, [3]chan struct{}{make(chan struct{}, p.opts.MaxConcurrent), make(chan struct{}, 1), make(chan struct{}, 1)})
	}
	per := int(live()-before) / n
	runtime.KeepAlive(wakes)
	for _, p := range peers {
		p.Close()
	}
	for _, p := range peers {
		p.Wait()
	}
	t.Logf("%d bytes of heap per idle Peer with c381bbe's wake channels, goroutine structs reused", per)
	if per <= idlePeerHeapBudget {
		t.Fatalf("with c381bbe's three wake channels an idle Peer keeps %d bytes, within TestIdlePeerHeap's budget of %d: the budget catches the regression only when the read loops' goroutine structs are new", per, idlePeerHeapBudget)
	}
}
