// Command idleconns measures what an idle WebSocket connection costs a
// server: it serves on loopback, starts itself again as a child process
// that opens -n connections and answers pings (a reader per connection),
// and reports, once they are all in and after a forced GC, the server's
// heap, goroutine stacks, goroutines and RSS per connection, each against
// the same figures taken before the child connected.
//
//	go run ./cmd/idleconns -impl ours -n 19000
//	go run ./cmd/idleconns -impl raw -n 19000
//
// -impl ours is ws.Server with a Mux (the bench Service), its
// MaxConnections raised to -n; raw is
// coder/websocket's Accept and a Read loop on the handler's goroutine, the
// leanest server one can write with it. Both raise the read limit to 32 MiB
// (ours' default). The child needs one descriptor per connection, and so
// does the server: both raise their soft limit to the hard one, and -n is
// cut to what fits.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/bench"
	"github.com/peerwire/jsonrpc/ws"
)

func main() {
	impl := flag.String("impl", "ours", "the server: ours (ws.Server) or raw (coder/websocket Accept and a Read loop)")
	n := flag.Int("n", 1000, "connections to open")
	settle := flag.Duration("settle", time.Second, "how long to wait once all are in, before measuring")
	client := flag.String("client", "", "internal: run as the child, connecting to this address")
	heapProfile := flag.String("heapprofile", "", "write the server's heap profile (every allocation sampled) to this file once measured")
	flag.Parse()
	if *heapProfile != "" {
		runtime.MemProfileRate = 1
	}
	var err error
	if *client != "" {
		err = runClient(*client, *n)
	} else {
		err = runServer(*impl, *n, *settle, *heapProfile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "idleconns:", err)
		os.Exit(1)
	}
}

// writeHeapProfile writes the heap profile to name.
func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sample is what the server holds at one moment.
type sample struct {
	heap, stacks, goroutines, rss uint64
}

// measure forces a GC, returns memory to the OS and samples: heap object
// bytes and goroutine stack bytes through runtime/metrics, RSS from /proc.
func measure() sample {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	ms := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	metrics.Read(ms)
	return sample{ms[0].Value.Uint64(), ms[1].Value.Uint64(), ms[2].Value.Uint64(), rss()}
}

// rss returns the process's resident set size, from /proc/self/status.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// handler returns the server of impl.
func handler(impl string, n int) (http.Handler, error) {
	switch impl {
	case "ours":
		// MaxConnections raised past -n, as a server that means to hold
		// that many would; nothing else changed from the defaults.
		return &ws.Server{Peer: jsonrpc.Options{Handler: bench.OursMux(&bench.Service{})}, MaxConnections: max(n+1, 10_000)}, nil
	case "raw":
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			c.SetReadLimit(32 << 20)
			for {
				if _, _, err := c.Read(context.Background()); err != nil {
					c.CloseNow()
					return
				}
			}
		}), nil
	}
	return nil, fmt.Errorf("unknown -impl %q: want ours or raw", impl)
}

func runServer(impl string, want int, settle time.Duration, heapProfile string) error {
	h, err := handler(impl, want)
	if err != nil {
		return err
	}
	n, limit := bench.MaxPeersForFDs(want)
	n = min(want, 2*n) // the helper halves for two ends in one process; here the server holds one
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	before := measure()
	child := exec.Command(os.Args[0], "-client", ln.Addr().String(), "-n", strconv.Itoa(n))
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := child.Start(); err != nil {
		return err
	}
	defer child.Wait()
	defer stdin.Close() // the child leaves when its stdin ends
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("the client process ended before it connected: %w", err)
	}
	got, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "connected ")))
	if err != nil || got != n {
		return fmt.Errorf("the client process said %q, want connected %d", line, n)
	}
	connect := time.Since(start)
	time.Sleep(settle) // handshakes' garbage dies, stacks settle
	after := measure()
	if heapProfile != "" {
		if err := writeHeapProfile(heapProfile); err != nil {
			return err
		}
	}

	per := func(a, b uint64) float64 { return (float64(b) - float64(a)) / float64(n) }
	fmt.Printf("impl=%s conns=%d (asked %d, open-file limit %d) go=%s connect=%v\n",
		impl, n, want, limit, runtime.Version(), connect.Round(time.Millisecond))
	fmt.Printf("per connection: heap %.0f B, stacks %.0f B, heap+stacks %.0f B, RSS %.0f B, goroutines %.2f\n",
		per(before.heap, after.heap), per(before.stacks, after.stacks),
		per(before.heap+before.stacks, after.heap+after.stacks), per(before.rss, after.rss),
		per(before.goroutines, after.goroutines))
	fmt.Printf("totals after: heap %d B, stacks %d B, RSS %d B, goroutines %d\n",
		after.heap, after.stacks, after.rss, after.goroutines)
	return nil
}

// runClient opens n connections to addr, a reader each (so that pings
// are answered), prints "connected n" and holds them until stdin ends.
func runClient(addr string, n int) error {
	bench.MaxPeersForFDs(n)
	conns := make([]*websocket.Conn, n)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, _, err := websocket.Dial(context.Background(), "ws://"+addr+"/", nil)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("connection %d: %w", i, err)
					}
					mu.Unlock()
					continue
				}
				conns[i] = c
				go func() {
					for {
						if _, _, err := c.Read(context.Background()); err != nil {
							return
						}
					}
				}()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	fmt.Printf("connected %d\n", n)
	os.Stdin.Read(make([]byte, 1)) // until the server closes our stdin
	for _, c := range conns {
		c.CloseNow()
	}
	return nil
}
