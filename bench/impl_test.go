package bench

import (
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
				params := []any{addParams, addParams, addParams}
				sums := make([]int, len(params))
				results := []any{&sums[0], &sums[1], &sums[2]}
				if err := bc.Batch(ctx, MethodAdd, params, results); err != nil {
					t.Fatal(err)
				}
				for i, v := range sums {
					if v != 3 {
						t.Fatalf("batch element %d = %d, want 3", i, v)
					}
				}
			}
		})
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
