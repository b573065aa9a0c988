package main

import (
	"math"
	"strings"
	"testing"
)

func TestParseAndMedian(t *testing.T) {
	in := `goos: linux
BenchmarkW1/ours-ws-2         	    8374	     60000 ns/op	    2761 B/op	      47 allocs/op
BenchmarkW1/ours-ws-2         	    8374	     40000 ns/op	    2761 B/op	      47 allocs/op
BenchmarkW1/raw-ws-2          	   11314	     20000 ns/op	       0 B/op	       0 allocs/op
--- BENCH: BenchmarkW4/ours-ws-2
    bench_test.go:185: 5846 of 49749 notifications were not counted (dropped)
BenchmarkW4/ours-tcp-header-2 	   33166	      5685 ns/op	         0.2692 lost/op	     917 B/op	      22 allocs/op
BenchmarkIdle/ours-ws-2       	       1	    585583 ns/op	     58174 B/peer	         5.000 goroutines/peer	      9963 peers
BenchmarkW6/ours-tcp-line-2                  	     186	    612818 ns/op	 106.94 MB/s	     65536 payload-B	  974591 B/op	      27 allocs/op
`
	s := samples{}
	if err := parse(strings.NewReader(in), s); err != nil {
		t.Fatal(err)
	}
	if got := s.get("W1", "ours-ws", "ns/op"); got != 50000 {
		t.Errorf("median ns/op = %v, want 50000", got)
	}
	if got := s.get("W1", rawOf("ours-ws"), "ns/op"); got != 20000 {
		t.Errorf("raw ns/op = %v, want 20000", got)
	}
	if got := s.get("W4", "ours-tcp-header", "lost/op"); got != 0.2692 {
		t.Errorf("lost/op = %v", got)
	}
	if got := s.get("Idle", "ours-ws", "B/peer"); got != 58174 {
		t.Errorf("B/peer = %v", got)
	}
	if got := rawOf("sourcegraph-tcp-header"); got != "raw-tcp-header" {
		t.Errorf("rawOf = %q", got)
	}
	if got := s.impls("W1"); strings.Join(got, ",") != "ours-ws,raw-ws" {
		t.Errorf("impls = %v", got)
	}
	if got := s.payload("W6"); got != 65536 {
		t.Errorf("W6 payload = %v, want 65536", got)
	}
	if got := s.get("W6", "ours-tcp-line", "MB/s"); got != 106.94 {
		t.Errorf("W6 MB/s = %v", got)
	}
	if s.hasPayload("W1") {
		t.Error("W1 has no payload-B metric, yet hasPayload says it has")
	}
	if got := short("sourcegraph-tcp-header"); got != "sg-hdr" {
		t.Errorf("short = %q", got)
	}
}

func TestFloorRows(t *testing.T) {
	in := `BenchmarkW1/ours-ws-2    100  30000 ns/op  1000 B/op  12 allocs/op
BenchmarkW1/geth-ws-2    100  40000 ns/op  9000 B/op  70 allocs/op
BenchmarkW1/raw-ws-2     100  20000 ns/op     0 B/op   0 allocs/op
BenchmarkW1/floor-ws-2   100  25000 ns/op   500 B/op   9 allocs/op
`
	s := samples{}
	if err := parse(strings.NewReader(in), s); err != nil {
		t.Fatal(err)
	}
	if got := s.impls("W1"); strings.Join(got, ",") != "ours-ws,geth-ws,floor-ws,raw-ws" {
		t.Errorf("impls = %v, want ours, the other library, the floor, raw", got)
	}
	if got := s.get("W1", floorOf("ours-ws"), "ns/op"); got != 25000 {
		t.Errorf("floor ns/op = %v, want 25000", got)
	}
	if isFloor("ours-ws") || !isFloor("floor-tcp-line") {
		t.Error("isFloor misclassifies")
	}
}

func TestMannWhitney(t *testing.T) {
	for _, tc := range []struct {
		a, b []float64
		want float64
	}{
		// Five runs each, wholly apart: 2 of the 252 orderings are as extreme.
		{[]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 2.0 / 252},
		{[]float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5}, 2.0 / 252},
		// Three against three, apart: 2 of 20.
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, 0.1},
		// Interleaved: no evidence.
		{[]float64{1, 3, 5}, []float64{2, 4, 6}, 0.7},
	} {
		if got := mannWhitney(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("mannWhitney(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestTransport: a row is compared with the raw row of its transport, W5's
// ours-ws-rawclients with raw-ws like ours-ws.
func TestTransport(t *testing.T) {
	for impl, want := range map[string]string{
		"ours-ws": "raw-ws", "ours-ws-rawclients": "raw-ws", "centrifuge-ws": "raw-ws",
		"jrpc2-tcp-header": "raw-tcp-header", "ours-tcp-line": "raw-tcp-line",
	} {
		if got := rawOf(impl); got != want {
			t.Errorf("rawOf(%q) = %q, want %q", impl, got, want)
		}
	}
}
