// Command ratios reads Go benchmark output of the bench module (one or
// more runs of it, in one or more files, or standard input) and prints the
// median of each metric and its ratio to the raw echo limit of the same
// transport.
//
//	go run ./cmd/ratios results.txt
//
// Benchmark names are Benchmark<workload>/<lib>-<transport>, transport
// being ws, tcp-header or tcp-line; the raw limit of a transport is
// raw-<transport>.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// samples[workload][impl][unit] are the values of all runs.
type samples map[string]map[string]map[string][]float64

// order is the order in which implementations first appear in the input
// (the order the benchmarks run them).
var order = map[string]int{}

var lineRE = regexp.MustCompile(`^Benchmark([^/\s]+)/(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

func parse(r io.Reader, s samples) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := lineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		w, impl, fields := m[1], m[2], strings.Fields(m[3])
		if _, ok := order[impl]; !ok {
			order[impl] = len(order)
		}
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			if s[w] == nil {
				s[w] = map[string]map[string][]float64{}
			}
			if s[w][impl] == nil {
				s[w][impl] = map[string][]float64{}
			}
			s[w][impl][fields[i+1]] = append(s[w][impl][fields[i+1]], v)
		}
	}
	return sc.Err()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// get returns the median of workload w, impl, unit (NaN if absent).
func (s samples) get(w, impl, unit string) float64 {
	return median(s[w][impl][unit])
}

func (s samples) runs(w, impl string) int { return len(s[w][impl]["ns/op"]) }

// impls returns the implementations measured in w: ours first, then the
// other libraries, then the raw limits, each group in run order.
func (s samples) impls(w string) []string {
	var names []string
	for k := range s[w] {
		names = append(names, k)
	}
	rank := func(n string) int {
		switch {
		case strings.HasPrefix(n, "ours-"):
			return 0
		case strings.HasPrefix(n, "raw-"):
			return 2
		}
		return 1
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return order[a] - order[b]
	})
	return names
}

func transport(impl string) string {
	_, t, _ := strings.Cut(impl, "-")
	return t
}

func rawOf(impl string) string { return "raw-" + transport(impl) }

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func ratio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "x"
}

func pct(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
}

type table struct {
	tw    *tabwriter.Writer
	width int // of the first column, which is left-aligned
}

func newTable(title, note string, cols ...string) *table {
	fmt.Printf("\n## %s\n", title)
	if note != "" {
		fmt.Println(note)
	}
	fmt.Println()
	t := &table{tw: tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight), width: 24}
	t.row(cols...)
	return t
}

func (t *table) row(cells ...string) {
	cells[0] = fmt.Sprintf("%-*s", t.width, cells[0])
	fmt.Fprintln(t.tw, strings.Join(cells, "\t")+"\t")
}
func (t *table) flush() { t.tw.Flush() }

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: ratios [file ...]   (default: standard input)")
	}
	flag.Parse()
	s := samples{}
	if flag.NArg() == 0 {
		if err := parse(os.Stdin, s); err != nil {
			fail(err)
		}
	}
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fail(err)
		}
		err = parse(f, s)
		f.Close()
		if err != nil {
			fail(err)
		}
	}
	if len(s) == 0 {
		fail(fmt.Errorf("no benchmark results found"))
	}

	// W1 and W1echo: latency of one call in flight, x raw of the transport.
	for _, w := range []struct{ name, title string }{
		{"W1", "W1: one call in flight, add {\"a\":1,\"b\":2}"},
		{"W1echo", "W1echo: one call in flight, echo of a 1 KiB string"},
	} {
		if s[w.name] == nil {
			continue
		}
		t := newTable(w.title, "x raw = ns/op / ns/op of the raw echo of the same transport (1.00x = the transport's floor; lower is better).",
			"impl", "runs", "ns/op", "x raw", "B/op", "allocs/op")
		for _, im := range s.impls(w.name) {
			ns := s.get(w.name, im, "ns/op")
			t.row(im, strconv.Itoa(s.runs(w.name, im)), num(ns), ratio(ns/s.get(w.name, rawOf(im), "ns/op")),
				num(s.get(w.name, im, "B/op")), num(s.get(w.name, im, "allocs/op")))
		}
		t.flush()
	}

	if s["W2"] != nil {
		t := newTable("W2: 64 goroutines sharing one connection, add",
			"of raw = calls/s as a fraction of the raw echo's calls/s on the same transport (100% = the floor; higher is better).",
			"impl", "runs", "ns/op", "calls/s", "of raw", "B/op", "allocs/op")
		for _, im := range s.impls("W2") {
			ns := s.get("W2", im, "ns/op")
			t.row(im, strconv.Itoa(s.runs("W2", im)), num(ns), num(1e9/ns), pct(s.get("W2", rawOf(im), "ns/op")/ns),
				num(s.get("W2", im, "B/op")), num(s.get("W2", im, "allocs/op")))
		}
		t.flush()
	}

	if s["W3"] != nil {
		t := newTable("W3: client batches of 100 add calls (per call)",
			"x raw W1 = ns per batched call / raw W1 ns per call on the same transport; vs own W1 = how many times faster than the impl's own W1.",
			"impl", "runs", "ns/call", "x raw W1", "vs own W1", "B/op", "allocs/op")
		for _, im := range s.impls("W3") {
			if s.runs("W3", im) == 0 {
				continue // skipped: no client batches
			}
			ns := s.get("W3", im, "ns/op")
			t.row(im, strconv.Itoa(s.runs("W3", im)), num(ns), ratio(ns/s.get("W1", rawOf(im), "ns/op")),
				ratio(s.get("W1", im, "ns/op")/ns), num(s.get("W3", im, "B/op")), num(s.get("W3", im, "allocs/op")))
		}
		t.flush()
	}

	if s["W4"] != nil {
		t := newTable("W4: one-way notifications until the server counted them",
			"of raw = notifications/s as a fraction of the raw limit's on the same transport (higher is better); lost = the fraction the server dropped (then ns/op is per counted one).",
			"impl", "runs", "ns/op", "notif/s", "of raw", "lost", "B/op", "allocs/op")
		for _, im := range s.impls("W4") {
			ns := s.get("W4", im, "ns/op")
			t.row(im, strconv.Itoa(s.runs("W4", im)), num(ns), num(1e9/ns), pct(s.get("W4", rawOf(im), "ns/op")/ns),
				pct(s.get("W4", im, "lost/op")), num(s.get("W4", im, "B/op")), num(s.get("W4", im, "allocs/op")))
		}
		t.flush()
	}

	if s["W5"] != nil {
		t := newTable("W5: one notification broadcast to 1,000 WebSocket clients, until all received it",
			"x raw = ns/broadcast / the raw coder/websocket write loop's (lower is better).",
			"impl", "runs", "ns/broadcast", "ns/client", "x raw", "B/op", "allocs/op")
		for _, im := range s.impls("W5") {
			ns := s.get("W5", im, "ns/op")
			t.row(im, strconv.Itoa(s.runs("W5", im)), num(ns), num(ns/1000), ratio(ns/s.get("W5", rawOf(im), "ns/op")),
				num(s.get("W5", im, "B/op")), num(s.get("W5", im, "allocs/op")))
		}
		t.flush()
	}

	if s["Idle"] != nil {
		t := newTable("Idle: idle WebSocket connections, both ends in one process",
			"B/peer = (HeapInuse+StackInuse) growth / connections, client and server end together; x raw = / raw coder/websocket's.",
			"impl", "runs", "peers", "B/peer", "x raw", "goroutines/peer", "connect ns")
		for _, im := range s.impls("Idle") {
			bp := s.get("Idle", im, "B/peer")
			t.row(im, strconv.Itoa(s.runs("Idle", im)), num(s.get("Idle", im, "peers")), num(bp),
				ratio(bp/s.get("Idle", rawOf(im), "B/peer")), num(s.get("Idle", im, "goroutines/peer")),
				num(s.get("Idle", im, "ns/op")))
		}
		t.flush()
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ratios:", err)
	os.Exit(1)
}
