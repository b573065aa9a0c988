package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// pairs are the comparisons the summary makes: ours against centrifuge
// without history, and with it.
var pairs = [][2]string{
	{"history=no/impl=ours", "history=no/impl=centrifuge"},
	{"history=no/impl=ours-pack", "history=no/impl=centrifuge"},
	{"history=yes/impl=ours", "history=yes/impl=centrifuge"},
	{"history=yes/impl=ours-pack", "history=yes/impl=centrifuge"},
}

// units are the figures of a BenchmarkFanout line, in order.
var units = []string{"ns/op", "allocs/pub", "B/pub", "wireB/sub", "msgs/sub", "lost"}

// summarize prints, for the BenchmarkFanout lines of the files, each
// server's median and range of every figure, then ours against
// centrifuge: the ratio of the medians.
func summarize(w io.Writer, files []string) error {
	vals := map[string]map[string][]float64{}
	var order []string
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || !strings.HasPrefix(fields[0], "BenchmarkFanout/") {
				continue
			}
			impl := strings.TrimPrefix(fields[0], "BenchmarkFanout/")
			if i := strings.LastIndexByte(impl, '-'); i > 0 {
				if _, err := strconv.Atoi(impl[i+1:]); err == nil {
					impl = impl[:i] // the -GOMAXPROCS suffix
				}
			}
			if vals[impl] == nil {
				vals[impl] = map[string][]float64{}
				order = append(order, impl)
			}
			for i := 2; i+1 < len(fields); i += 2 {
				if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
					vals[impl][fields[i+1]] = append(vals[impl][fields[i+1]], v)
				}
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	if len(order) == 0 {
		return fmt.Errorf("no BenchmarkFanout lines in %v", files)
	}
	fmt.Fprintf(w, "%-28s %5s %22s %20s %20s %18s %16s %16s\n", "fan-out (medians, [min-max])", "n",
		"delivered all (ms)", "allocs/broadcast", "B/broadcast", "wire B/subscriber", "msgs/subscriber", "subscribers lost")
	for _, impl := range order {
		v := vals[impl]
		fmt.Fprintf(w, "%-28s %5d", impl, len(v["ns/op"]))
		for _, u := range units {
			scale := 1.0
			if u == "ns/op" {
				scale = 1e-6
			}
			med, lo, hi := stats(v[u])
			fmt.Fprintf(w, " %8.1f [%.1f-%.1f]", med*scale, lo*scale, hi*scale)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-56s %12s %12s %12s\n", "ours / centrifuge (ratio of medians)", "time", "allocs", "wire bytes")
	for _, p := range pairs {
		a, b := vals[p[0]], vals[p[1]]
		if a == nil || b == nil {
			continue
		}
		fmt.Fprintf(w, "%-56s", p[0]+" / "+p[1])
		for _, u := range []string{"ns/op", "allocs/pub", "wireB/sub"} {
			ma, _, _ := stats(a[u])
			mb, _, _ := stats(b[u])
			fmt.Fprintf(w, " %11.2fx", ma/mb)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// stats returns the median, the least and the greatest of v.
func stats(v []float64) (med, lo, hi float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := slices.Sorted(slices.Values(v))
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[0], s[len(s)-1]
}
