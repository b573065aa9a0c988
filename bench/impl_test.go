package bench

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// TestImpls checks that every implementation serves the workloads'
// methods correctly, so that the benchmarks time working code.
func TestImpls(t *testing.T) {
	for _, im := range Impls() {
		t.Run(im.Name(), func(t *testing.T) {
			svc := &Service{}
			c, stop := im.Start(t, svc)
			defer stop()

			var sum int
			if err := c.Call(ctx, MethodAdd, addParams, &sum); err != nil {
				t.Fatal(err)
			}
			var s string
			if err := c.Call(ctx, MethodEcho, echoParams, &s); err != nil {
				t.Fatal(err)
			}
			if !IsRaw(im) && (sum != 3 || s != EchoString) {
				t.Fatalf("add = %d, echo = %d bytes; want 3 and %d bytes", sum, len(s), EchoSize)
			}
			var big string
			if err := c.Call(ctx, MethodEcho, bigEchoParams, &big); err != nil {
				t.Fatalf("W6 echo: %v", err)
			}
			if !IsRaw(im) && big != BigEchoString {
				t.Fatalf("W6 echo returned %d bytes, want the %d sent", len(big), BigEchoSize)
			}
			var items []CompletionItem
			if err := c.Call(ctx, MethodComplete, completeParams, &items); err != nil {
				t.Fatalf("W7 complete: %v", err)
			}
			if !IsRaw(im) && !slices.Equal(items, Completions) {
				t.Fatalf("W7 complete returned %d items, not the %d of Completions", len(items), len(Completions))
			}

			const n = 100
			done := svc.Arm(n)
			for range n {
				if err := c.Notify(ctx, MethodTick, tickParams); err != nil {
					t.Fatal(err)
				}
			}
			if lost, _ := svc.WaitTicks(done, n); lost > 0 {
				t.Fatalf("%d of %d notifications not counted", lost, n)
			}

			if bc, ok := c.(Batcher); ok {
				for _, k := range []int{1, 3, W3BatchSize} {
					params := make([]any, k)
					sums := make([]int, k)
					results := make([]any, k)
					for i := range k {
						params[i], results[i] = addParams, &sums[i]
					}
					if err := bc.Batch(ctx, MethodAdd, params, results); err != nil {
						t.Fatalf("batch of %d: %v", k, err)
					}
					for i, v := range sums {
						if !IsRaw(im) && v != 3 {
							t.Fatalf("batch of %d: element %d = %d, want 3", k, i, v)
						}
					}
				}
			} else if IsRaw(im) {
				t.Fatal("a raw client must batch, W3's ratios divide by it")
			}
		})
	}
}

// TestRawAllocs checks that the raw limits stay the floor: once warm, a
// raw round trip (client and server together) allocates nothing, whatever
// its size.
func TestRawAllocs(t *testing.T) {
	for _, im := range Impls() {
		if !IsRaw(im) {
			continue
		}
		t.Run(im.Name(), func(t *testing.T) {
			c, stop := im.Start(t, &Service{})
			defer stop()
			bc := c.(Batcher)
			batch := make([]any, W3BatchSize)
			for i := range batch {
				batch[i] = addParams
			}
			for _, tc := range []struct {
				name string
				call func() error
			}{
				{"add", func() error { return c.Call(ctx, MethodAdd, addParams, nil) }},
				{"echo", func() error { return c.Call(ctx, MethodEcho, echoParams, nil) }},
				{"W6 echo", func() error { return c.Call(ctx, MethodEcho, bigEchoParams, nil) }},
				{"W7 complete", func() error { return c.Call(ctx, MethodComplete, completeParams, nil) }},
				{"W3 batch", func() error { return bc.Batch(ctx, MethodAdd, batch, batch) }},
			} {
				for range 10 { // warm up: buffers grow to the largest message
					if err := tc.call(); err != nil {
						t.Fatal(err)
					}
				}
				if n := testing.AllocsPerRun(50, func() { tc.call() }); n > 0 {
					t.Errorf("%s: %.1f allocations per round trip, want 0", tc.name, n)
				}
			}
		})
	}
}

// TestRawMessagesAreReal checks that the raw messages are what a
// JSON-RPC server would answer: each reply decodes to the result the
// Service computes for the request.
func TestRawMessagesAreReal(t *testing.T) {
	var (
		svc   Service
		batch []struct{ ID, Result int }
		one   struct {
			ID     int
			Result json.RawMessage
		}
	)
	for k := range rawKinds {
		if k == rawTick {
			continue
		}
		if k >= rawBatch {
			if err := json.Unmarshal(Raw.Reply[k], &batch); err != nil {
				t.Fatal(err)
			}
			if n := int(k-rawBatch) + 1; len(batch) != n || batch[n-1].ID != n || batch[n-1].Result != 3 {
				t.Fatalf("batch of %d: reply %.80s…", n, Raw.Reply[k])
			}
			continue
		}
		if err := json.Unmarshal(Raw.Reply[k], &one); err != nil || one.ID != 1 {
			t.Fatalf("kind %d: %v, id %d", k, err, one.ID)
		}
		want := map[rawKind]any{
			rawAdd:      svc.Add(AddParams{1, 2}),
			rawEcho:     svc.Echo(EchoParams{EchoString}),
			rawBigEcho:  svc.Echo(EchoParams{BigEchoString}),
			rawComplete: svc.Complete(CompleteParams{CompleteN}),
		}[k]
		if wb, _ := json.Marshal(want); !bytes.Equal(one.Result, wb) {
			t.Fatalf("kind %d: result %.80s…, want %.80s…", k, one.Result, wb)
		}
	}
	if got := len(Raw.Reply[rawComplete]) - len(`{"jsonrpc":"2.0","id":1,"result":}`); got != CompletionsSize {
		t.Errorf("W7 raw reply carries %d bytes of result, want %d", got, CompletionsSize)
	}
	if CompletionsSize < 90<<10 || CompletionsSize > 110<<10 {
		t.Errorf("W7 result is %d bytes, want about 100 KiB", CompletionsSize)
	}
}

// TestFleets checks the broadcast fleets with a few clients.
func TestFleets(t *testing.T) {
	for _, fi := range FleetImpls() {
		t.Run(fi.Name(), func(t *testing.T) {
			svc := &Service{}
			const n = 20
			f := fi.StartFleet(t, svc, n)
			defer f.Stop()
			for range 3 {
				done := svc.Arm(n)
				if err := f.Broadcast(); err != nil {
					t.Fatal(err)
				}
				if lost, _ := svc.WaitTicks(done, n); lost > 0 {
					t.Fatalf("%d of %d clients missed the broadcast", lost, n)
				}
			}
		})
	}
}

// maxW1Allocs is the bound on allocations per W1 round trip,
// client and server together, over every transport of ours.
const maxW1Allocs = 12

// TestOursW1Allocs holds ours to maxW1Allocs allocations per W1 round
// trip (add, one call in flight), counted as the benchmark counts them:
// both ends in this process.
func TestOursW1Allocs(t *testing.T) {
	for _, im := range Impls() {
		if _, ok := im.(OursTCP); !ok && im.Name() != (OursWS{}).Name() {
			continue
		}
		t.Run(im.Name(), func(t *testing.T) {
			c, stop := im.Start(t, &Service{})
			defer stop()
			var sum int
			call := func() {
				if err := c.Call(ctx, MethodAdd, addParams, &sum); err != nil {
					t.Fatal(err)
				}
			}
			for range 100 { // warm up: pools, queues and names settle
				call()
			}
			if n := testing.AllocsPerRun(500, call); n > maxW1Allocs {
				t.Errorf("%.1f allocations per W1 round trip, want at most %d", n, maxW1Allocs)
			} else {
				t.Logf("%.1f allocations per W1 round trip", n)
			}
		})
	}
}
