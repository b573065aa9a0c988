package bench

import (
	"errors"
	"io"
	"testing"
)

// BenchmarkW1post is W1 over plain HTTP POST with keep-alive: one add
// call in flight, each a POST of its own.
func BenchmarkW1post(b *testing.B) {
	for _, im := range HTTPImpls() {
		b.Run(im.Name(), func(b *testing.B) {
			svc := &Service{}
			c, stop := im.Start(b, svc)
			defer stop()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			var sum int
			for range b.N {
				var err error
				if sum, err = addCall(c, 1, 2); err != nil { // as W1 does
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			if !IsRaw(im) && sum != 3 {
				b.Fatalf("add returned %d, want 3", sum)
			}
		})
	}
}

// TestHTTPImpls calls add and sends a tick through every plain POST
// implementation.
func TestHTTPImpls(t *testing.T) {
	for _, im := range HTTPImpls() {
		t.Run(im.Name(), func(t *testing.T) {
			svc := &Service{}
			c, stop := im.Start(t, svc)
			defer stop()
			var sum int
			if err := c.Call(ctx, MethodAdd, addParams, &sum); err != nil {
				t.Fatal(err)
			}
			if !IsRaw(im) && sum != 3 {
				t.Fatalf("add = %d, want 3", sum)
			}
			done := svc.Arm(1)
			// go-ethereum's HTTP client reads a JSON reply even to a
			// notification, and fails with io.EOF on its server's empty
			// body, though the server has served it.
			if err := c.Notify(ctx, MethodTick, tickParams); err != nil && !(im.Name() == "geth-http" && errors.Is(err, io.EOF)) {
				t.Fatalf("Notify: %v", err)
			}
			if lost, _ := svc.WaitTicks(done, 1); lost != 0 {
				t.Fatal("the tick was not counted")
			}
		})
	}
}
