package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/internal/testbin"
	"github.com/peerwire/jsonrpc/ws"
)

const (
	hostileCalls    = 4000                   // echo calls the hostile client pipelines
	hostileParam    = 60 << 10               // bytes of each one's string param: ~240 MB in all
	hostileDeadline = 20 * time.Second       // bounds the hostile client's sending
	hostileStall    = 3 * time.Second        // a write blocked this long means the server pushes back
	settle          = 2 * time.Second        // the server keeps working this long after the sending stops
	maxPeakRSS      = 64 << 20               // bytes
	maxLatency      = 100 * time.Millisecond // for 99% of the well-behaved calls
	maxStall        = time.Second            // for every one of them
	callInterval    = 20 * time.Millisecond
	baseline        = 2 * time.Second // the well-behaved calls alone, first
	loadFactor      = 5               // the bounds are at least this times the calls' own p99 and max alone
)

// TestHostileClientMemoryBounded pins issue 9 finding 7: the server's
// memory is bounded in bytes, not in messages, and one hostile connection
// cannot starve another. A client pipelines 4,000 echo calls of ~60 KB each
// (~240 MB) and never reads a reply. The server may push back on its writes
// or end its connection, but its peak RSS must stay under 64 MiB, and a
// second client's small echo calls, one every 20 ms meanwhile, must all
// succeed, 99% of them within 100 ms and all within 1 s, or, on a machine
// whose load alone makes them slower, within 5 times their own p99 and
// max measured alone just before.
//
// The server is a child built without the race detector even under -race,
// which inflates memory 5-10x. The 100 ms bound is on the 99th percentile:
// on a busy 2-core machine the OS alone can delay a call past it (seen: 122
// ms once in 925 calls with three CPU hogs running), while a starved
// connection shows as calls that fail or wait for seconds.
func TestHostileClientMemoryBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the server's peak RSS (VmHWM) from /proc")
	}
	bin := buildNoRace(t)
	var stderr testbin.Buffer
	proc, url := startWSServer(t, bin, &stderr)
	defer func() {
		if err := proc.stop(); err != nil {
			t.Logf("server exit: %v", err)
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	good, err := ws.Dial(ctx, url)
	if err != nil {
		t.Fatalf("dial the well-behaved client: %v", err)
	}
	defer func() { good.Close(); good.Wait() }()
	// Warm-up, outside the latency check: the first call pays for the
	// server's first use of its code and buffers.
	if err := good.Call(ctx, "echo", []string{"warm-up"}, nil); err != nil {
		t.Fatalf("warm-up call: %v", err)
	}
	// The same calls alone first: what this machine's load costs them
	// without the hostile client, so that the bounds below judge
	// starvation, not the load (p99 107 ms, 11 of 855 past 100 ms, at a
	// load average of 15, with other test binaries beside it).
	stopBase := make(chan struct{})
	baseDone := make(chan []time.Duration)
	go func() { baseDone <- politeCalls(t, good, stopBase) }()
	time.Sleep(baseline)
	close(stopBase)
	base := <-baseDone
	slices.Sort(base)
	latencyBound, stallBound := maxLatency, maxStall
	if len(base) > 0 {
		latencyBound = max(maxLatency, loadFactor*base[len(base)*99/100])
		stallBound = max(maxStall, loadFactor*base[len(base)-1])
	}
	hctx, hcancel := context.WithTimeout(context.Background(), hostileDeadline)
	defer hcancel()
	hostile, _, err := websocket.Dial(hctx, url, nil)
	if err != nil {
		t.Fatalf("dial the hostile client: %v", err)
	}
	defer hostile.CloseNow() // never Read: its replies pile up on the server's side

	stopGood := make(chan struct{})
	goodDone := make(chan []time.Duration)
	go func() { goodDone <- politeCalls(t, good, stopGood) }()

	var sent, lastWrite atomic.Int64
	lastWrite.Store(time.Now().UnixNano())
	hostileDone := make(chan error, 1)
	go func() {
		pad := strings.Repeat("x", hostileParam)
		for i := range hostileCalls {
			msg := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"echo","params":["` + pad + `"]}`
			if err := hostile.Write(hctx, websocket.MessageText, []byte(msg)); err != nil {
				hostileDone <- err
				return
			}
			sent.Add(1)
			lastWrite.Store(time.Now().UnixNano())
		}
		hostileDone <- nil
	}()
	begin := time.Now()
	ended := waitHostile(hostileDone, &lastWrite, hcancel)
	t.Logf("hostile client: %d of %d calls sent in %v; %s", sent.Load(), hostileCalls, time.Since(begin).Round(time.Millisecond), ended)

	time.Sleep(settle)
	close(stopGood)
	lat := <-goodDone
	peak, err := peakRSS(proc.cmd.Process.Pid) // the server is still running
	if err != nil {
		t.Fatalf("read the server's peak RSS: %v", err)
	}
	t.Logf("server peak RSS (VmHWM): %.1f MiB", float64(peak)/(1<<20))
	if peak >= maxPeakRSS {
		t.Errorf("server peak RSS %.1f MiB, want < %d MiB", float64(peak)/(1<<20), maxPeakRSS>>20)
	}
	if len(lat) < 10 {
		t.Fatalf("only %d calls of the well-behaved client completed", len(lat))
	}
	slices.Sort(lat)
	p99, worst := lat[len(lat)*99/100], lat[len(lat)-1]
	t.Logf("well-behaved client: %d calls, p99 %v, max %v (alone before: %d calls, bounds p99 < %v, max < %v)",
		len(lat), p99, worst, len(base), latencyBound, stallBound)
	if p99 >= latencyBound || worst >= stallBound {
		n := len(lat) - slices.IndexFunc(lat, func(d time.Duration) bool { return d >= latencyBound })
		t.Errorf("%d of %d well-behaved calls took >= %v (p99 %v, max %v); want p99 < %v, max < %v",
			n, len(lat), latencyBound, p99, worst, latencyBound, stallBound)
	}
}

// waitHostile waits for the hostile sender to end, stopping it once a write
// has been blocked for hostileStall, and says how its sending ended.
func waitHostile(done <-chan error, lastWrite *atomic.Int64, stop func()) string {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	stalled := false
	for {
		select {
		case err := <-done:
			switch {
			case err == nil:
				return "all sent, with no push-back"
			case stalled:
				return fmt.Sprintf("a write blocked for %v (push-back); stopped", hostileStall)
			case errors.Is(err, context.DeadlineExceeded):
				return fmt.Sprintf("still sending at the %v deadline", hostileDeadline)
			default:
				return fmt.Sprintf("a write failed (the server ended the connection?): %v", err)
			}
		case <-tick.C:
			if !stalled && time.Since(time.Unix(0, lastWrite.Load())) > hostileStall {
				stalled = true
				stop()
			}
		}
	}
}

// politeCalls makes a small echo call every callInterval until stop is
// closed and returns the latencies of those that succeeded; it reports the
// others (the first few) as errors.
func politeCalls(t *testing.T, p *jsonrpc.Peer, stop <-chan struct{}) []time.Duration {
	var lat []time.Duration
	failed := 0
	tick := time.NewTicker(callInterval)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			if failed > 0 {
				t.Errorf("%d of %d well-behaved calls failed", failed, i)
			}
			return lat
		case <-tick.C:
		}
		want := "ping-" + strconv.Itoa(i)
		ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
		var got []string
		begin := time.Now()
		err := p.Call(ctx, "echo", []string{want}, &got)
		d := time.Since(begin)
		cancel()
		if err != nil || len(got) != 1 || got[0] != want {
			if failed++; failed <= 3 {
				t.Errorf("well-behaved call %d after %v: got %q, %v; want [%q]", i, d, got, err, want)
			}
			continue
		}
		lat = append(lat, d)
	}
}

// buildNoRace builds the server without the race detector into a temporary
// directory and returns the binary's path.
func buildNoRace(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "conformance")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// peakRSS returns the peak resident set size of process pid, in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
