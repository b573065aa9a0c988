package bench

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// One op is one call (or one notification, or one broadcast), so that
// ns/op compares across implementations and workloads. Setup (server,
// connection) is done once per implementation, outside the timer; the
// servers run in this process, so B/op and allocs/op count client and
// server together.

var (
	ctx = context.Background()

	addParams      any = AddParams{A: 1, B: 2}
	echoParams     any = EchoParams{S: EchoString}
	bigEchoParams  any = EchoParams{S: BigEchoString}
	completeParams any = CompleteParams{N: CompleteN}
	tickParams     any = TickParams{N: 1}
)

// W2Goroutines is how many goroutines share one connection in W2.
const W2Goroutines = 64

// W5Clients is the number of WebSocket clients of the W5 broadcast.
const W5Clients = 1000

// IdlePeers is the number of idle WebSocket connections Idle holds.
const IdlePeers = 10000

// eachImpl runs body as the sub-benchmark <impl> of b for every Impl that
// keep accepts (nil: all). The implementation is started on the first run
// of the sub-benchmark (so that a -bench filter skips its setup) and
// stopped once the sub-benchmark is done.
func eachImpl(b *testing.B, keep func(Impl, Client) bool, body func(b *testing.B, svc *Service, im Impl, c Client)) {
	for _, im := range Impls() {
		var (
			svc  *Service
			c    Client
			stop func()
		)
		b.Run(im.Name(), func(b *testing.B) {
			if stop == nil {
				svc = &Service{}
				c, stop = im.Start(b, svc)
			}
			if keep != nil && !keep(im, c) {
				b.Skip("no client batches")
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			body(b, svc, im, c)
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
		if stop != nil {
			stop()
		}
	}
}

// BenchmarkW1 is one call in flight: add {"a":1,"b":2} → 3, made as a
// program makes it (see addCall), so that allocs/op is what a program pays
// per round trip, both ends and the transport included.
func BenchmarkW1(b *testing.B) {
	eachImpl(b, nil, func(b *testing.B, _ *Service, im Impl, c Client) {
		var sum int
		for range b.N {
			var err error
			if sum, err = addCall(c, 1, 2); err != nil {
				b.Fatal(err)
			}
		}
		if !IsRaw(im) && sum != 3 {
			b.Fatalf("add returned %d, want 3", sum)
		}
	})
}

// addCall is one W1 call as a program writes it: the params built for
// the call and boxed into the interface then (the other workloads pass
// values boxed once, beforehand), and the result in a variable of the
// call's own, which escapes to the heap through the interface. Both cost
// an allocation each, for every implementation alike, raw included.
//
//go:noinline
func addCall(c Client, a, b int) (int, error) {
	var sum int
	err := c.Call(ctx, MethodAdd, AddParams{A: a, B: b}, &sum)
	return sum, err
}

// BenchmarkW1echo is one call in flight echoing a 1 KiB string.
func BenchmarkW1echo(b *testing.B) {
	benchEcho(b, echoParams, EchoString)
}

// benchEcho is one call in flight echoing want. The payload, for MB/s
// (SetBytes) and the payload-B metric that cmd/ratios divides by, is the
// string's length, counted once though the string travels both ways.
func benchEcho(b *testing.B, params any, want string) {
	eachImpl(b, nil, func(b *testing.B, _ *Service, im Impl, c Client) {
		b.SetBytes(int64(len(want)))
		var s string
		for range b.N {
			if err := c.Call(ctx, MethodEcho, params, &s); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(want)), "payload-B")
		if !IsRaw(im) && s != want {
			b.Fatalf("echo returned %d bytes, want %d", len(s), len(want))
		}
	})
}

// BenchmarkW2 is 64 goroutines sharing one connection, calling add.
func BenchmarkW2(b *testing.B) {
	eachImpl(b, nil, func(b *testing.B, _ *Service, im Impl, c Client) {
		var (
			next atomic.Int64
			bad  atomic.Int64
			wg   sync.WaitGroup
			once sync.Once
			ferr error
		)
		for range W2Goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var sum int
				for next.Add(1) <= int64(b.N) {
					if err := c.Call(ctx, MethodAdd, addParams, &sum); err != nil {
						once.Do(func() { ferr = err })
						return
					}
					if !IsRaw(im) && sum != 3 {
						bad.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if ferr != nil {
			b.Fatal(ferr)
		}
		if n := bad.Load(); n > 0 {
			b.Fatalf("%d wrong results", n)
		}
	})
}

// BenchmarkW3 is client batches of 100 add calls; one op is one call.
// Only implementations with a client batch API run it; the raw limits
// send the fixed array of requests and get the fixed array of replies.
//
// b.N calls are made, no more: when b.N is not a multiple of 100 the last
// batch is shorter (b.N mod 100 calls) for every implementation, raw
// included (it has fixed bytes for every batch size), so ns/op, B/op and
// allocs/op are all per call made. Rounding b.N up to whole batches
// instead would leave B/op and allocs/op divided by the wrong count. A
// run has at most one short batch among its b.N/100 full ones.
func BenchmarkW3(b *testing.B) {
	hasBatch := func(_ Impl, c Client) bool { _, ok := c.(Batcher); return ok }
	eachImpl(b, hasBatch, func(b *testing.B, _ *Service, im Impl, c Client) {
		bc := c.(Batcher)
		params := make([]any, W3BatchSize)
		results := make([]any, W3BatchSize)
		sums := make([]int, W3BatchSize)
		for i := range params {
			params[i] = addParams
			results[i] = &sums[i]
		}
		b.ResetTimer()
		for i := 0; i < b.N; i += W3BatchSize {
			k := min(W3BatchSize, b.N-i)
			if err := bc.Batch(ctx, MethodAdd, params[:k], results[:k]); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if IsRaw(im) {
			return
		}
		for i := range min(W3BatchSize, b.N) {
			if sums[i] != 3 {
				b.Fatalf("batch element %d returned %d, want 3", i, sums[i])
			}
		}
	})
}

// BenchmarkW4 is one-way notifications, timed until the server has
// counted them all; one op is one notification. A server that drops some
// (its queue full) is timed to its last counted one, ns/op is then per
// counted notification, and lost/op says which fraction it dropped.
func BenchmarkW4(b *testing.B) {
	eachImpl(b, nil, func(b *testing.B, svc *Service, _ Impl, c Client) {
		start := time.Now()
		done := svc.Arm(int64(b.N))
		for range b.N {
			if err := c.Notify(ctx, MethodTick, tickParams); err != nil {
				b.Fatal(err)
			}
		}
		lost, last := svc.WaitTicks(done, int64(b.N))
		if lost > 0 {
			// The server dropped notifications (a full inbound queue, say):
			// time what it delivered, and say how many it lost.
			b.StopTimer()
			delivered := int64(b.N) - lost
			if delivered == 0 {
				b.Fatalf("all %d notifications lost", b.N)
			}
			b.ReportMetric(float64(last.Sub(start).Nanoseconds())/float64(delivered), "ns/op")
			b.Logf("%d of %d notifications were not counted (dropped)", lost, b.N)
		}
		b.ReportMetric(float64(lost)/float64(b.N), "lost/op")
	})
}

// BenchmarkW6 is one call in flight echoing a 64 KiB string.
func BenchmarkW6(b *testing.B) {
	benchEcho(b, bigEchoParams, BigEchoString)
}

// BenchmarkW7 is one call in flight of complete {"n":1000}, whose result
// is 1,000 completion items, about 100 KiB of JSON; the client decodes it
// into a fresh []CompletionItem each time, as a client keeping the list
// would. The payload (SetBytes, payload-B) is the result's JSON.
func BenchmarkW7(b *testing.B) {
	eachImpl(b, nil, func(b *testing.B, _ *Service, im Impl, c Client) {
		b.SetBytes(int64(CompletionsSize))
		var items []CompletionItem
		for range b.N {
			items = nil
			if err := c.Call(ctx, MethodComplete, completeParams, &items); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(CompletionsSize), "payload-B")
		if IsRaw(im) {
			return
		}
		if len(items) != CompleteN || items[CompleteN-1] != Completions[CompleteN-1] {
			b.Fatalf("complete returned %d items, want %d ending with %+v", len(items), CompleteN, Completions[CompleteN-1])
		}
	})
}

// BenchmarkW5 is a broadcast of one notification to 1,000 WebSocket
// clients, timed until all of them received it; one op is one broadcast.
func BenchmarkW5(b *testing.B) {
	for _, fi := range FleetImpls() {
		var (
			svc *Service
			f   *Fleet
		)
		b.Run(fi.Name(), func(b *testing.B) {
			if f == nil {
				n, limit := MaxPeersForFDs(W5Clients)
				if n < W5Clients {
					b.Skipf("open-file limit %d is too low for %d clients", limit, W5Clients)
				}
				svc = &Service{}
				f = fi.StartFleet(b, svc, W5Clients)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				done := svc.Arm(W5Clients)
				if err := f.Broadcast(); err != nil {
					b.Fatal(err)
				}
				if lost, _ := svc.WaitTicks(done, W5Clients); lost > 0 {
					b.Fatalf("%d of %d clients did not receive the broadcast", lost, W5Clients)
				}
			}
		})
		if f != nil {
			f.Stop()
		}
	}
}

// BenchmarkIdle holds 10,000 idle WebSocket connections (or as many as
// the open-file limit allows: two descriptors each, both ends being in
// this process) and reports the heap and goroutine stacks in use per
// connection, both ends together, as B/peer; goroutines/peer likewise.
// ns/op is the time to connect one.
func BenchmarkIdle(b *testing.B) {
	for _, fi := range FleetImpls() {
		b.Run(fi.Name(), func(b *testing.B) {
			n, limit := MaxPeersForFDs(IdlePeers)
			if n < IdlePeers/2 {
				b.Skipf("open-file limit %d allows only %d connections", limit, n)
			}
			svc := &Service{}
			before := MemInUse()
			g0 := runtime.NumGoroutine()
			start := time.Now()
			f := fi.StartFleet(b, svc, n)
			connect := time.Since(start)
			time.Sleep(200 * time.Millisecond) // let handshakes' garbage die
			after := MemInUse()
			g1 := runtime.NumGoroutine()
			f.Stop()
			b.ReportMetric(float64(connect.Nanoseconds())/float64(n), "ns/op")
			b.ReportMetric(float64(int64(after)-int64(before))/float64(n), "B/peer")
			b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/peer")
			b.ReportMetric(float64(n), "peers")
		})
	}
}
