// Command fanout measures a broadcast to many WebSocket subscribers with
// the subscribers in another process: one server publishes -msgs
// broadcasts of a 100-byte object back to back to -n subscribers of one
// topic, and it reports, per round, the time until every subscriber has
// every broadcast, the server's heap allocations per broadcast (objects
// and bytes, runtime/metrics, the whole process from before the first
// publish until the last delivery) and the bytes each subscriber took on
// the wire (payloads plus a 2- or 4-byte frame header per message) and
// its messages.
//
//	go run ./cmd/fanout -rounds 3
//	go run ./cmd/fanout -impls ours-group,centrifuge -n 1000 -msgs 200
//
// The servers (-impls, all started in this process, each with -n
// subscribers, measured in turn round after round):
//
//   - ours-group: ws.Server, each connection added to a jsonrpc.Group in
//     OnConnect; a broadcast is Group.Notify of topic.message params (no
//     history);
//   - ours-hub: ws.Server with a topic.Hub on its default Memory history
//     (1 MiB, 5 minutes); each subscriber calls topic.subscribe; a
//     broadcast is Hub.Publish;
//   - ours-group-pack, ours-hub-pack: the same with
//     jsonrpc.Options.PackNotifications set to -pack;
//   - centrifuge: a centrifuge v0.40.1 Node on its memory broker, its
//     WebSocket handler; each subscriber speaks centrifuge's JSON protocol
//     (connect, subscribe, answering the server's pings); a broadcast is
//     Node.Publish without history;
//   - centrifuge-history: the same with history (WithHistory: -history
//     publications, 5 minutes).
//
// The subscribers are coder/websocket readers in a child process (this
// program again, with -client), counting the broadcasts each message
// holds (a message of ours is a notification or a batch array of them;
// centrifuge's holds one push per line), so that the subscribers cost
// both servers alike. Output is in Go's benchmark format, for benchstat:
// BenchmarkFanout/history=<no|yes>/impl=<centrifuge|ours|ours-pack> (see
// benchName) with ns/op (one op: every broadcast of a round
// delivered), allocs/pub, B/pub, wireB/sub, msgs/sub and lost (the
// subscribers whose connection that server has ended so far: they are
// not awaited, and not in the per-subscriber figures); -summary
// prints the medians and ranges of such output, and ours against
// centrifuge.
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
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/peerwire/jsonrpc/bench"
)

// note is the 100-byte object every broadcast carries.
var note = []byte(`{"id":12345,"text":"a note of some forty-five characters, or so.","author":"alice","likes":3,"k":1}`)

func main() {
	impls := flag.String("impls", "centrifuge,ours-group,ours-group-pack,centrifuge-history,ours-hub,ours-hub-pack", "the servers, comma-separated")
	n := flag.Int("n", 1000, "subscribers per server")
	msgs := flag.Int("msgs", 200, "broadcasts per round")
	rounds := flag.Int("rounds", 3, "rounds: each measures every server in turn")
	pack := flag.Int("pack", 64, "PackNotifications of the -pack servers")
	history := flag.Int("history", 1000, "centrifuge-history's history size")
	summary := flag.Bool("summary", false, "print the medians and ranges of the BenchmarkFanout lines in the files named as arguments, and ours against centrifuge")
	client := flag.String("client", "", "internal: run as the child, subscribing to these comma-separated kind=address pairs")
	flag.Parse()
	var err error
	switch {
	case *summary:
		err = summarize(os.Stdout, flag.Args())
	case *client != "":
		err = runClient(*client, *n)
	default:
		err = runServer(strings.Split(*impls, ","), *n, *msgs, *rounds, *pack, *history)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

// server is one of the servers measured.
type server struct {
	name    string
	kind    string // what its subscribers speak: ours, ourshub or centrifuge
	addr    string
	publish func(i int) error
	stop    func()
}

func start(name string, n, pack, history int) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var s *server
	var h http.Handler
	switch name {
	case "ours-group", "ours-group-pack":
		s, h = oursGroup(n, packIf(name, pack))
	case "ours-hub", "ours-hub-pack":
		s, h = oursHub(n, packIf(name, pack))
	case "centrifuge", "centrifuge-history":
		hist := 0
		if name == "centrifuge-history" {
			hist = history
		}
		s, h, err = centrifugeServer(hist)
	default:
		err = fmt.Errorf("unknown server %q", name)
	}
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	s.name, s.addr = name, ln.Addr().String()
	inner := s.stop
	s.stop = func() {
		srv.Close()
		if inner != nil {
			inner()
		}
	}
	return s, nil
}

// benchName is the name of server name's lines: history=no (Group,
// centrifuge without history) or yes (Hub, centrifuge with history), then
// impl=centrifuge, ours or ours-pack, so that benchstat -col /impl puts
// them side by side.
func benchName(name string) string {
	history := "no"
	if strings.Contains(name, "hub") || strings.Contains(name, "history") {
		history = "yes"
	}
	impl := "ours"
	switch {
	case strings.HasPrefix(name, "centrifuge"):
		impl = "centrifuge"
	case strings.HasSuffix(name, "-pack"):
		impl = "ours-pack"
	}
	return "history=" + history + "/impl=" + impl
}

// packIf returns pack for a -pack server, 0 otherwise.
func packIf(name string, pack int) int {
	if strings.HasSuffix(name, "-pack") {
		return pack
	}
	return 0
}

// allocs returns the heap allocations of the process so far, in objects
// and bytes.
func allocs() (objects, bytes uint64) {
	ms := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(ms)
	return ms[0].Value.Uint64(), ms[1].Value.Uint64()
}

func runServer(names []string, n, msgs, rounds, pack, history int) error {
	bench.MaxPeersForFDs(2 * n * len(names))
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	var targets []string
	for _, name := range names {
		s, err := start(name, n, pack, history)
		if err != nil {
			return err
		}
		servers = append(servers, s)
		targets = append(targets, s.kind+"="+s.addr)
	}
	child := exec.Command(os.Args[0], "-client", strings.Join(targets, ","), "-n", strconv.Itoa(n))
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(); err != nil {
		return err
	}
	defer child.Wait()
	defer stdin.Close() // the child leaves when its stdin ends
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	expect := func(prefix string, d time.Duration) (string, error) {
		select {
		case l, ok := <-lines:
			if !ok {
				return "", fmt.Errorf("the client process ended while %q was awaited", prefix)
			}
			if !strings.HasPrefix(l, prefix) {
				return "", fmt.Errorf("the client process said %q, want %q", l, prefix)
			}
			return strings.TrimPrefix(l, prefix), nil
		case <-time.After(d):
			return "", fmt.Errorf("no %q from the client process within %v", prefix, d)
		}
	}
	if _, err := expect("subscribed", time.Minute); err != nil {
		return err
	}
	fmt.Printf("goos: %s\ngoarch: %s\npkg: github.com/peerwire/jsonrpc/bench/cmd/fanout\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(os.Stderr, "fanout: %d servers x %d subscribers, %d broadcasts a round, %s\n", len(servers), n, msgs, runtime.Version())
	for r := 1; r <= rounds; r++ {
		for i, s := range servers {
			fmt.Fprintf(stdin, "expect %d %d\n", i, r*msgs)
			if _, err := expect("armed", 10*time.Second); err != nil {
				return err
			}
			runtime.GC()
			o0, b0 := allocs()
			t0 := time.Now()
			for k := range msgs {
				if err := s.publish((r-1)*msgs + k); err != nil {
					return fmt.Errorf("%s: publish: %w", s.name, err)
				}
			}
			got, err := expect("done ", 30*time.Second)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", s.name, r, err)
			}
			elapsed := time.Since(t0)
			o1, b1 := allocs()
			var wire, frames, lost int64
			if _, err := fmt.Sscan(got, &wire, &frames, &lost); err != nil {
				return fmt.Errorf("the client process said done %q: %w", got, err)
			}
			fmt.Printf("BenchmarkFanout/%s-%d\t1\t%d ns/op\t%.1f allocs/pub\t%.0f B/pub\t%.0f wireB/sub\t%.2f msgs/sub\t%d lost\n",
				benchName(s.name), runtime.GOMAXPROCS(0), elapsed.Nanoseconds(),
				float64(o1-o0)/float64(msgs), float64(b1-b0)/float64(msgs),
				float64(wire)/float64(n-int(lost)), float64(frames)/float64(n-int(lost)), lost)
		}
	}
	return nil
}

// runClient subscribes n connections to each target and then, for each
// "expect i count" line on stdin, says "armed", and "done wire messages"
// once every subscriber of target i has count broadcasts: the bytes and
// messages they took since armed.
func runClient(list string, n int) error {
	bench.MaxPeersForFDs(n * (strings.Count(list, ",") + 1))
	var fleets []*fleet
	defer func() {
		for _, f := range fleets {
			f.close()
		}
	}()
	for _, t := range strings.Split(list, ",") {
		kind, addr, _ := strings.Cut(t, "=")
		f, err := subscribe(kind, addr, n)
		if err != nil {
			return fmt.Errorf("%s at %s: %w", kind, addr, err)
		}
		fleets = append(fleets, f)
	}
	fmt.Println("subscribed")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var i int
		var count int64
		if _, err := fmt.Sscanf(in.Text(), "expect %d %d", &i, &count); err != nil || i < 0 || i >= len(fleets) {
			return fmt.Errorf("bad line from the server process: %q", in.Text())
		}
		f := fleets[i]
		w0, m0 := f.arm(count)
		fmt.Println("armed")
		select {
		case <-f.done:
		case <-time.After(time.Minute):
			return fmt.Errorf("%d subscribers still short of %d broadcasts after a minute", f.remaining.Load(), count)
		}
		w1, m1 := f.totals()
		fmt.Println("done", w1-w0, m1-m0, f.lost.Load())
	}
	return nil
}

// ctx is the background context of the subscribers' reads and writes.
var ctx = context.Background()
