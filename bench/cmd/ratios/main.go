// Command ratios reads Go benchmark output of the bench module (one or
// more runs of it, in one or more files, or standard input) and prints the
// median of each metric, its ratio to the raw echo limit of the same
// transport, the cost per KiB of the workloads that carry a payload, and
// ours against each other library.
//
//	go run ./cmd/ratios results.txt
//
// Benchmark names are Benchmark<workload>/<lib>-<transport>, transport
// being ws, tcp-header or tcp-line; the raw limit of a transport is
// raw-<transport>, its JSON floor (the raw transport plus one Marshal and
// one Unmarshal on each side) floor-<transport>.
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
// other libraries, then the JSON floors and the raw limits, each group in
// run order.
func (s samples) impls(w string) []string {
	var names []string
	for k := range s[w] {
		names = append(names, k)
	}
	rank := func(n string) int {
		switch {
		case isOurs(n):
			return 0
		case isFloor(n):
			return 2
		case isRaw(n):
			return 3
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

// transport returns the transport of impl, its name after the library's:
// "ws" for ours-ws and for ours-ws-rawclients (the same server, W5's
// clients raw), "tcp-header" for jrpc2-tcp-header.
func transport(impl string) string {
	_, t, _ := strings.Cut(impl, "-")
	return strings.TrimSuffix(t, "-rawclients")
}

func rawOf(impl string) string { return "raw-" + transport(impl) }

func floorOf(impl string) string { return "floor-" + transport(impl) }

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

	for _, w := range workloads {
		if s[w.name] != nil {
			w.print(s, w.name)
		}
	}
	versusPeers(s, "ns/op")
	versusPeers(s, cpuUnit)
}

// workloads are the tables, in the order printed.
var workloads = []struct {
	name  string
	print func(s samples, w string)
}{
	{"W1", oneInFlight(`W1: one call in flight, add {"a":1,"b":2}`)},
	{"W1echo", oneInFlight("W1echo: one call in flight, echo of a 1 KiB string")},
	{"W1post", oneInFlight(`W1post: one call in flight over plain HTTP POST with keep-alive, add {"a":1,"b":2}`)},
	{"W2", w2},
	{"W3", w3},
	{"W4", w4},
	{"W5", w5},
	{"W6", oneInFlight("W6: one call in flight, echo of a 64 KiB string")},
	{"W7", oneInFlight("W7: one call in flight, complete: a result of 1,000 completion items")},
	{"Idle", idle},
}

// w2 prints W2: calls/s of 64 callers sharing a connection, as a fraction of raw.
func w2(s samples, w string) {
	t := newTable("W2: 64 goroutines sharing one connection, add",
		"of raw = calls/s as a fraction of the raw echo's calls/s on the same transport (100% = the floor; higher is better).",
		"impl", "runs", "ns/op", "calls/s", "of raw", "B/op", "allocs/op")
	for _, im := range s.impls(w) {
		ns := s.get(w, im, "ns/op")
		t.row(im, strconv.Itoa(s.runs(w, im)), num(ns), num(1e9/ns), pct(s.get(w, rawOf(im), "ns/op")/ns),
			num(s.get(w, im, "B/op")), num(s.get(w, im, "allocs/op")))
	}
	t.flush()
}

// w3 prints W3: per batched call, over raw per element of the same array.
func w3(s samples, w string) {
	t := newTable("W3: client batches of 100 add calls (per call)",
		"x raw = ns per batched call / ns per element of the raw echo's array of 100 on the same transport; vs own W1 = how many times faster than the impl's own W1.",
		"impl", "runs", "ns/call", "x raw", "vs own W1", "B/op", "allocs/op")
	for _, im := range s.impls(w) {
		if s.runs(w, im) == 0 {
			continue // skipped: no client batches
		}
		ns := s.get(w, im, "ns/op")
		t.row(im, strconv.Itoa(s.runs(w, im)), num(ns), ratio(ns/s.get(w, rawOf(im), "ns/op")),
			ratio(s.get("W1", im, "ns/op")/ns), num(s.get(w, im, "B/op")), num(s.get(w, im, "allocs/op")))
	}
	t.flush()
}

// w4 prints W4: notifications/s as a fraction of raw, and the fraction lost.
func w4(s samples, w string) {
	t := newTable("W4: one-way notifications until the server counted them",
		"of raw = notifications/s as a fraction of the raw limit's on the same transport (higher is better); lost = the fraction the server dropped (then ns/op is per counted one).",
		"impl", "runs", "ns/op", "notif/s", "of raw", "lost", "B/op", "allocs/op")
	for _, im := range s.impls(w) {
		ns := s.get(w, im, "ns/op")
		t.row(im, strconv.Itoa(s.runs(w, im)), num(ns), num(1e9/ns), pct(s.get(w, rawOf(im), "ns/op")/ns),
			pct(s.get(w, im, "lost/op")), num(s.get(w, im, "B/op")), num(s.get(w, im, "allocs/op")))
	}
	t.flush()
}

// w5 prints W5: broadcast time over the raw write loop's.
func w5(s samples, w string) {
	t := newTable("W5: one notification broadcast to 1,000 WebSocket clients, until all received it",
		"x raw = ns/broadcast / the raw coder/websocket write loop's (lower is better).",
		"impl", "runs", "ns/broadcast", "ns/client", "x raw", "B/op", "allocs/op")
	for _, im := range s.impls(w) {
		ns := s.get(w, im, "ns/op")
		t.row(im, strconv.Itoa(s.runs(w, im)), num(ns), num(ns/1000), ratio(ns/s.get(w, rawOf(im), "ns/op")),
			num(s.get(w, im, "B/op")), num(s.get(w, im, "allocs/op")))
	}
	t.flush()
}

// idle prints Idle: bytes per idle connection over raw coder/websocket's.
func idle(s samples, w string) {
	t := newTable("Idle: idle WebSocket connections, both ends in one process",
		"B/peer = (HeapInuse+StackInuse) growth / connections, client and server end together; x raw = / raw coder/websocket's.",
		"impl", "runs", "peers", "B/peer", "x raw", "goroutines/peer", "connect ns")
	for _, im := range s.impls(w) {
		bp := s.get(w, im, "B/peer")
		t.row(im, strconv.Itoa(s.runs(w, im)), num(s.get(w, im, "peers")), num(bp),
			ratio(bp/s.get(w, rawOf(im), "B/peer")), num(s.get(w, im, "goroutines/peer")),
			num(s.get(w, im, "ns/op")))
	}
	t.flush()
}

// oneInFlight returns the printer of a workload with one call in flight:
// latency and its ratio to the raw echo of the same transport, and, if it
// reports a payload (payload-B), throughput and cost per KiB.
func oneInFlight(title string) func(s samples, w string) {
	return func(s samples, w string) {
		if !s.hasPayload(w) {
			t := newTable(title, "x raw = ns/op / ns/op of the raw echo of the same transport (1.00x = the transport's floor; lower is better); x floor = / the JSON floor's on the same transport (one Marshal and one Unmarshal each side); allocs x floor likewise.",
				"impl", "runs", "ns/op", "x raw", "x floor", "cpu-ns/op", "cpu x raw", "cpu x floor", "B/op", "allocs/op", "allocs x floor")
			for _, im := range s.impls(w) {
				ns, allocs, cpu := s.get(w, im, "ns/op"), s.get(w, im, "allocs/op"), s.get(w, im, cpuUnit)
				t.row(im, strconv.Itoa(s.runs(w, im)), num(ns), ratio(ns/s.get(w, rawOf(im), "ns/op")),
					ratio(ns/s.get(w, floorOf(im), "ns/op")),
					num(cpu), ratio(cpu/s.get(w, rawOf(im), cpuUnit)), ratio(cpu/s.get(w, floorOf(im), cpuUnit)),
					num(s.get(w, im, "B/op")), num(allocs), ratio(allocs/s.get(w, floorOf(im), "allocs/op")))
			}
			t.flush()
			return
		}
		t := newTable(fmt.Sprintf("%s (payload %s B = %s KiB)", title, num(s.payload(w)), num(s.payload(w)/1024)),
			"x raw = ns/op / ns/op of the raw echo of the same transport; x floor = / the JSON floor's on the same transport; MB/s = payload bytes per second; µs/KiB = ns/op per KiB of payload; +µs/KiB = the same minus the raw echo's (what JSON-RPC adds per KiB).",
			"impl", "runs", "ns/op", "x raw", "x floor", "cpu x floor", "MB/s", "µs/KiB", "+µs/KiB", "B/op", "allocs/op")
		for _, im := range s.impls(w) {
			ns, raw := s.get(w, im, "ns/op"), s.get(w, rawOf(im), "ns/op")
			kib := s.get(w, im, "payload-B") / 1024
			t.row(im, strconv.Itoa(s.runs(w, im)), num(ns), ratio(ns/raw), ratio(ns/s.get(w, floorOf(im), "ns/op")),
				ratio(s.get(w, im, cpuUnit)/s.get(w, floorOf(im), cpuUnit)),
				num(kib*1024/ns*1e3), num(ns/1e3/kib), num((ns-raw)/1e3/kib),
				num(s.get(w, im, "B/op")), num(s.get(w, im, "allocs/op")))
		}
		t.flush()
	}
}

// hasPayload reports whether w's results carry the payload-B metric.
func (s samples) hasPayload(w string) bool { return !math.IsNaN(s.payload(w)) }

// payload returns w's payload in bytes (the largest reported: it is the
// same for every implementation), NaN if none is.
func (s samples) payload(w string) float64 {
	p := math.NaN()
	for im := range s[w] {
		if v := s.get(w, im, "payload-B"); !math.IsNaN(v) && !(v <= p) {
			p = v
		}
	}
	return p
}

// peerWorkloads are the workloads in which other libraries run too.
var peerWorkloads = []string{"W1", "W1echo", "W1post", "W2", "W3", "W4", "W6", "W7"}

// cpuUnit is the CPU time per op the bench module reports beside ns/op:
// the figure another process's load moves least.
const cpuUnit = "cpu-ns/op"

// versusPeers prints, for each workload and each of ours, its time per op
// (unit: ns/op, or cpuUnit) over every other library's and over the best
// of them (any transport).
func versusPeers(s samples, unit string) {
	var peers []string
	seen := map[string]bool{}
	for _, w := range peerWorkloads {
		for _, im := range s.impls(w) {
			if !isOurs(im) && !isRaw(im) && !isFloor(im) && !seen[im] {
				seen[im] = true
				peers = append(peers, im)
			}
		}
	}
	slices.SortFunc(peers, func(a, b string) int { return order[a] - order[b] })
	if len(peers) == 0 {
		return
	}
	cols := []string{"workload / ours", unit}
	for _, p := range peers {
		cols = append(cols, short(p))
	}
	t := newTable("Ours vs the other libraries, by "+unit,
		"ours "+unit+" / the library's on the same workload (below 1.00x: ours is faster; - = not run); best = the fastest other library, any transport; p = two-sided Mann-Whitney U test of ours' runs against best's (exact, as benchstat computes it for few runs; p < 0.05 is significant). sg = sourcegraph, hdr = tcp-header, line = tcp-line.",
		append(cols, "best", "x best", "p")...)
	for _, w := range peerWorkloads {
		for _, im := range s.impls(w) {
			if !isOurs(im) || s.runs(w, im) == 0 {
				continue
			}
			ns := s.get(w, im, unit)
			cells := []string{w + " " + im, num(ns)}
			best, bestNS := "-", math.Inf(1)
			for _, p := range peers {
				pns := s.get(w, p, unit)
				cells = append(cells, ratio(ns/pns))
				if pns < bestNS {
					best, bestNS = p, pns
				}
			}
			p := "-"
			if best != "-" {
				p = strconv.FormatFloat(mannWhitney(s[w][im][unit], s[w][best][unit]), 'f', 3, 64)
			}
			t.row(append(cells, short(best), ratio(ns/bestNS), p)...)
		}
	}
	t.flush()
}

// short abbreviates an implementation's name for a column header.
func short(impl string) string {
	return strings.NewReplacer("sourcegraph-", "sg-", "tcp-header", "hdr", "tcp-line", "line").Replace(impl)
}

func isOurs(impl string) bool  { return strings.HasPrefix(impl, "ours-") }
func isRaw(impl string) bool   { return strings.HasPrefix(impl, "raw-") }
func isFloor(impl string) bool { return strings.HasPrefix(impl, "floor-") }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ratios:", err)
	os.Exit(1)
}

// mannWhitney returns the two-sided p-value of the Mann-Whitney U test of
// samples a and b: the probability, were both drawn from one
// distribution, of a U statistic at least as far from its mean as the one
// seen. It is exact (every ordering of the pooled samples counted), which
// fits the handful of runs a benchmark gets; ties count one half.
func mannWhitney(a, b []float64) float64 {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return math.NaN()
	}
	u := 0.0 // pairs in which a's value is below b's
	for _, x := range a {
		for _, y := range b {
			switch {
			case x < y:
				u++
			case x == y:
				u += 0.5
			}
		}
	}
	// count[i][j][k]: orderings of i a's and j b's with k pairs "a below b".
	maxU := n1 * n2
	prev := make([][]float64, n2+1)
	for j := range prev {
		prev[j] = make([]float64, maxU+1)
		prev[j][0] = 1 // no a's: U = 0, one ordering
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		for j := range cur {
			cur[j] = make([]float64, maxU+1)
			for k := 0; k <= maxU; k++ {
				// The last element is an a (below all j b's after it: none) or a b
				// (every one of the i a's before it is below it).
				c := prev[j][k]
				if j > 0 && k >= i {
					c += cur[j-1][k-i]
				}
				cur[j][k] = c
			}
		}
		prev = cur
	}
	dist := prev[n2]
	total, mean := 0.0, float64(maxU)/2
	for _, c := range dist {
		total += c
	}
	dev := math.Abs(u - mean)
	tail := 0.0
	for k, c := range dist {
		if math.Abs(float64(k)-mean) >= dev-1e-9 {
			tail += c
		}
	}
	return math.Min(1, tail/total)
}
