//go:build soak && unix

package ws_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// The soak test: go test -race -tags soak -run TestSoak ./ws/ (or without
// -race). SOAK_DURATION (a time.Duration, default 60s) sets how long the
// load runs.
//
// soakClients WebSocket clients stay connected for the whole run while a
// few churn clients come and go. Each permanent client runs soakWorkers
// goroutines that call "add" with operands no other call uses (so a result
// proves the reply was this call's), send batches of soakBatch adds, and
// call "callback", whose server handler calls the client back and combines
// its answer. Meanwhile the server broadcasts a tick with a sequence number
// through a jsonrpc.Group every soakTick.
//
// At the end: every call was answered exactly once with its own result,
// counted per connection and per id on both sides (by interceptors, in the
// order the ids were issued), and no reply was dropped or misrouted (no
// Warn record); each client got every tick sent while it was connected, in
// order; the heap after a GC is back near where it started, and so is the
// number of goroutines.
const (
	soakClients     = 300
	soakWorkers     = 4
	soakBatch       = 10
	soakChurners    = 4
	soakTick        = 20 * time.Millisecond
	soakHeapSlack   = 16 << 20
	soakDefaultTime = 60 * time.Second
)

func TestSoak(t *testing.T) {
	duration := soakDefaultTime
	if s := os.Getenv("SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("SOAK_DURATION=%q: want a positive duration such as 10s", s)
		}
		duration = d
	}
	clients := soakClients
	// Each connection takes two descriptors in this process (both ends),
	// plus the churn and the rest: stay far below the limit.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		if room := (int64(lim.Cur) - 512) / 4; room < int64(clients) {
			clients = int(max(room, 0))
			t.Logf("ulimit -n is %d: %d clients instead of %d", lim.Cur, clients, soakClients)
		}
	}
	if clients < 10 {
		t.Skip("too few file descriptors for a soak test")
	}

	goroutines0 := runtime.NumGoroutine()
	heap0 := heapAfterGC()
	// Clients and server log apart: a client never has cause to warn; the
	// server may only warn of connections that did not end cleanly (see
	// checkAccounts).
	clientWarns, serverWarns := &warnCounter{}, &warnCounter{}
	logger := slog.New(clientWarns)

	ss := newSoakServer(t, slog.New(serverWarns), clients)
	ctx, cancel := context.WithTimeout(context.Background(), duration+2*time.Minute)
	defer cancel()

	// Heap samples through the run.
	var peak atomic.Uint64
	peak.Store(heap0)
	sampleStop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tk := time.NewTicker(250 * time.Millisecond)
		defer tk.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-sampleStop:
				return
			case <-tk.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > peak.Load() {
					peak.Store(ms.HeapAlloc)
				}
			}
		}
	}()

	// Connect the permanent clients, 16 dials at a time.
	perm := make([]*soakClient, clients)
	var dials sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range perm {
		dials.Add(1)
		sem <- struct{}{}
		go func() {
			defer dials.Done()
			defer func() { <-sem }()
			perm[i] = ss.connect(t, ctx, i, logger)
		}()
	}
	dials.Wait()
	for _, c := range perm {
		if c == nil {
			t.FailNow() // connect said why
		}
	}

	// The load.
	loadStart := time.Now()
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for _, c := range perm {
		for w := range soakWorkers {
			workers.Add(1)
			go func() { defer workers.Done(); c.work(t, ctx, w, stop) }()
		}
	}
	var churned []*soakClient
	var churnMu sync.Mutex
	var nextToken atomic.Int64
	nextToken.Store(int64(clients))
	for range soakChurners {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := ss.connect(t, ctx, int(nextToken.Add(1)-1), logger)
				if c == nil {
					return
				}
				c.churn(t, ctx)
				churnMu.Lock()
				churned = append(churned, c)
				churnMu.Unlock()
			}
		}()
	}
	time.Sleep(duration)
	close(stop)
	if !waitDone(&workers, time.Minute) {
		t.Fatal("workers still running a minute after the end of the load")
	}
	ss.stopBroadcasts()
	loadTime := time.Since(loadStart)
	sent := ss.seq.Load()

	// Every permanent client gets every tick sent after it joined, in
	// order.
	deadline := time.Now().Add(30 * time.Second)
	for _, c := range perm {
		for c.last.Load() != sent-1 && c.outOfOrder.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		c.checkTicks(t, true, sent)
	}

	// Close everything, then check the accounts of both sides.
	var closes sync.WaitGroup
	for _, c := range perm {
		closes.Add(1)
		go func() { defer closes.Done(); c.close(t) }()
	}
	closes.Wait()
	ss.shutdown(t)
	var calls, batches, callbacks, unclean int64
	for _, c := range append(perm, churned...) {
		r, ok := ss.result(c.token)
		c.checkAccounts(t, r, ok)
		calls += c.calls.Load()
		batches += c.batches.Load()
		callbacks += c.callbacks.Load()
		if r.waitErr != nil {
			unclean++
			if unclean <= 3 {
				t.Logf("client %d closed, but the server's Wait = %v", c.token, r.waitErr)
			}
		}
	}
	if n := clientWarns.n.Load(); n > 0 {
		t.Errorf("%d Warn records on the clients; the first: %s", n, clientWarns.firstRecord())
	}
	if n, ended := serverWarns.n.Load(), serverWarns.ended.Load(); n != ended || ended != unclean {
		t.Errorf("%d Warn records on the server, %d of ended connections, %d unclean ends; the first: %s",
			n, ended, unclean, serverWarns.firstRecord())
	}
	close(sampleStop)
	<-sampled

	// Nothing held any more: memory and goroutines back near the start.
	perm, churned, ss = nil, nil, nil
	heap1 := heapAfterGC()
	goroutines1 := runtime.NumGoroutine()
	for end := time.Now().Add(10 * time.Second); goroutines1 > goroutines0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
		goroutines1 = runtime.NumGoroutine()
	}
	if heap1 > heap0+soakHeapSlack {
		t.Errorf("heap %.1f MiB after the run, %.1f MiB before: more than %d MiB kept",
			mib(heap1), mib(heap0), soakHeapSlack>>20)
	}
	if goroutines1 > goroutines0 {
		t.Errorf("%d goroutines after the run, %d before", goroutines1, goroutines0)
	}
	total := calls + batches*soakBatch + 2*callbacks
	summary := fmt.Sprintf("soak: connections %d (+%d churned), calls %d, batches %d (x%d), callbacks %d, broadcasts %d, "+
		"calls/s %.0f, peak heap %.1f MiB, final heap %.1f MiB (start %.1f), goroutines %d (start %d), duration %v, race %v, "+
		"unclean server-side ends %d",
		clients, nextToken.Load()-int64(clients), calls, batches, soakBatch, callbacks, sent,
		float64(total)/loadTime.Seconds(), mib(peak.Load()), mib(heap1), mib(heap0), goroutines1, goroutines0,
		loadTime.Round(time.Millisecond), raceEnabled(), unclean)
	t.Log(summary)
	fmt.Println(summary)
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC() // the second empties the pools' victim caches
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// warnCounter is a slog.Handler counting records at Warn and above, and
// among them those of a connection that ended with an error.
type warnCounter struct {
	n, ended atomic.Int64
	mu       sync.Mutex
	first    string
}

func (w *warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *warnCounter) WithGroup(string) slog.Handler                { return w }
func (w *warnCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "jsonrpc: connection ended" {
		w.ended.Add(1)
	}
	if w.n.Add(1) == 1 {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
		w.mu.Lock()
		w.first = b.String()
		w.mu.Unlock()
	}
	return nil
}
func (w *warnCounter) firstRecord() string { w.mu.Lock(); defer w.mu.Unlock(); return w.first }

// idCounts counts outcomes per id, for the ids a Peer issues: 1, 2, 3...
type idCounts struct {
	mu    sync.Mutex
	n     []uint8 // n[id] outcomes, saturating
	alien int     // ids that are not such integers
}

func (c *idCounts) add(id jsonrpc.ID) {
	i, err := strconv.Atoi(id.String())
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || i < 1 || i > 1<<26 {
		c.alien++
		return
	}
	for len(c.n) <= i {
		c.n = append(c.n, 0)
	}
	if c.n[i] < 255 {
		c.n[i]++
	}
}

// summary returns the number of ids counted and whether ids 1 to that
// number each had exactly one outcome.
func (c *idCounts) summary() (ids int, once bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	once = c.alien == 0
	for i := 1; i < len(c.n); i++ {
		if c.n[i] != 1 {
			once = false
		}
	}
	return max(len(c.n)-1, 0), once
}

// soakServer is the server side: a ws.Server whose connections join a
// Group, and the books kept on each connection.
type soakServer struct {
	srv   *ws.Server
	hs    *httptest.Server
	url   string
	group jsonrpc.Group

	mu    sync.Mutex   // orders joins against broadcasts
	seq   atomic.Int64 // the next tick's sequence number
	bstop chan struct{}
	bdone chan struct{}

	accts   sync.Map // *jsonrpc.Peer → *serverAcct
	closing sync.WaitGroup
	resMu   sync.Mutex
	results map[int]serverResult // by client token
}

type serverAcct struct {
	joinSeq int64
	token   atomic.Int64 // -1 until join
	in, out idCounts     // calls served, calls made (callbacks)
}

// serverResult is what the server saw of one connection, once it ended.
type serverResult struct {
	inIDs, outIDs   int
	inOnce, outOnce bool
	waitErr         error
}

func newSoakServer(t *testing.T, logger *slog.Logger, clients int) *soakServer {
	ss := &soakServer{bstop: make(chan struct{}), bdone: make(chan struct{}), results: map[int]serverResult{}}
	ss.group.MaxQueue = 4096
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "add", func(_ context.Context, p [2]int64) (int64, error) { return p[0] + p[1], nil })
	jsonrpc.Register(m, "join", func(ctx context.Context, token int64) (int64, error) {
		a := ss.acct(jsonrpc.PeerFromContext(ctx))
		a.token.Store(token)
		return a.joinSeq, nil
	})
	jsonrpc.Register(m, "callback", func(ctx context.Context, x int64) (int64, error) {
		var tripled int64
		if err := jsonrpc.PeerFromContext(ctx).Call(ctx, "triple", []int64{x}, &tripled); err != nil {
			return 0, err
		}
		return tripled + 1, nil
	})
	count := func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		v, err := next(ctx)
		if !info.ID.IsZero() {
			a := ss.acct(info.Peer)
			if info.Outbound {
				a.out.add(info.ID)
			} else {
				a.in.add(info.ID)
			}
		}
		return v, err
	}
	ss.srv = &ws.Server{
		MaxConnections: 2*clients + 64,
		Peer: jsonrpc.Options{
			Handler:      m,
			Logger:       logger,
			Interceptors: []jsonrpc.Interceptor{count},
		},
		OnConnect: func(p *jsonrpc.Peer, _ *http.Request) {
			a := &serverAcct{}
			a.token.Store(-1)
			ss.mu.Lock()
			ss.group.Add(p)
			a.joinSeq = ss.seq.Load()
			ss.mu.Unlock()
			ss.accts.Store(p, a)
			ss.closing.Add(1)
			go func() {
				defer ss.closing.Done()
				err := p.Wait()
				ss.accts.Delete(p)
				var r serverResult
				r.inIDs, r.inOnce = a.in.summary()
				r.outIDs, r.outOnce = a.out.summary()
				r.waitErr = err
				ss.resMu.Lock()
				ss.results[int(a.token.Load())] = r
				ss.resMu.Unlock()
			}()
		},
	}
	ss.hs = httptest.NewServer(ss.srv)
	ss.url = "ws" + strings.TrimPrefix(ss.hs.URL, "http")
	go ss.broadcast()
	return ss
}

func (ss *soakServer) acct(p *jsonrpc.Peer) *serverAcct {
	a, ok := ss.accts.Load(p)
	if !ok {
		panic("soak: no account for a connection") // OnConnect runs before any handler
	}
	return a.(*serverAcct)
}

// broadcast sends a tick every soakTick until stopBroadcasts.
func (ss *soakServer) broadcast() {
	defer close(ss.bdone)
	tk := time.NewTicker(soakTick)
	defer tk.Stop()
	for {
		select {
		case <-ss.bstop:
			return
		case <-tk.C:
		}
		ss.mu.Lock()
		if err := ss.group.Notify("tick", []int64{ss.seq.Load()}); err != nil {
			panic(err)
		}
		ss.seq.Add(1)
		ss.mu.Unlock()
	}
}

func (ss *soakServer) stopBroadcasts() {
	close(ss.bstop)
	<-ss.bdone
}

func (ss *soakServer) shutdown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ss.srv.Shutdown(ctx); err != nil {
		t.Errorf("Server.Shutdown: %v", err)
	}
	ss.hs.Close()
	if !waitDone(&ss.closing, 30*time.Second) {
		t.Error("server connections not ended 30 s after Shutdown")
	}
}

func (ss *soakServer) result(token int) (serverResult, bool) {
	ss.resMu.Lock()
	defer ss.resMu.Unlock()
	r, ok := ss.results[token]
	return r, ok
}

// soakClient is one client connection and its books.
type soakClient struct {
	token   int
	peer    *jsonrpc.Peer
	joinSeq int64

	first, last atomic.Int64 // ticks: the first and last seq received, -1 before any
	outOfOrder  atomic.Int64 // a seq that did not follow the last, plus one

	out, in                   idCounts // calls made (with batch elements), callbacks served
	calls, batches, callbacks atomic.Int64
	failures                  atomic.Int64
	waitErr                   error
}

// connect dials a client with token and joins; it reports a failure and
// returns nil if it cannot.
func (ss *soakServer) connect(t *testing.T, ctx context.Context, token int, logger *slog.Logger) *soakClient {
	c := &soakClient{token: token}
	c.first.Store(-1)
	c.last.Store(-1)
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "tick", func(_ context.Context, seq int64) (any, error) {
		// Notifications run one at a time, in order.
		if c.first.Load() < 0 {
			c.first.Store(seq)
		} else if seq != c.last.Load()+1 {
			c.outOfOrder.CompareAndSwap(0, seq+1)
		}
		c.last.Store(seq)
		return nil, nil
	})
	jsonrpc.Register(m, "triple", func(_ context.Context, x int64) (int64, error) { return 3 * x, nil })
	count := func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		v, err := next(ctx)
		if !info.ID.IsZero() {
			if info.Outbound {
				c.out.add(info.ID)
			} else {
				c.in.add(info.ID)
			}
		}
		return v, err
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, err := ws.Dial(dctx, ss.url, ws.DialOptions{
		Peer:       jsonrpc.Options{Handler: m, Logger: logger, Interceptors: []jsonrpc.Interceptor{count}},
		HTTPClient: ss.hs.Client(),
	})
	if err != nil {
		t.Errorf("client %d: Dial: %v", token, err)
		return nil
	}
	c.peer = p
	if err := p.Call(ctx, "join", []int{token}, &c.joinSeq); err != nil {
		t.Errorf("client %d: join: %v", token, err)
		p.Close()
		return nil
	}
	return c
}

// fail reports a failed call, the first few of each client only.
func (c *soakClient) fail(t *testing.T, format string, args ...any) {
	if c.failures.Add(1) <= 3 {
		t.Errorf("client %d: "+format, append([]any{c.token}, args...)...)
	}
}

// operand returns a number no other call of the run uses: the client's
// token, the worker and a counter, each in bits of its own.
func (c *soakClient) operand(w int, k int64) int64 {
	return int64(c.token)<<36 | int64(w)<<30 | k
}

// work calls, batches and calls back until stop.
func (c *soakClient) work(t *testing.T, ctx context.Context, w int, stop <-chan struct{}) {
	var k int64
	next := func() int64 { k++; return c.operand(w, k) }
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		switch {
		case i%10 == 9:
			c.batch(t, ctx, next)
		case i%5 == 4:
			c.callback(t, ctx, next())
		default:
			c.add(t, ctx, next())
		}
	}
}

func (c *soakClient) add(t *testing.T, ctx context.Context, x int64) {
	y := x%9973 + 1
	var sum int64
	if err := c.peer.Call(ctx, "add", []int64{x, y}, &sum); err != nil {
		c.fail(t, "add(%d, %d): %v", x, y, err)
	} else if sum != x+y {
		c.fail(t, "add(%d, %d) = %d: another call's result", x, y, sum)
	}
	c.calls.Add(1)
}

func (c *soakClient) batch(t *testing.T, ctx context.Context, next func() int64) {
	xs := make([]int64, soakBatch)
	sums := make([]int64, soakBatch)
	elems := make([]jsonrpc.BatchElem, soakBatch)
	for j := range elems {
		xs[j] = next()
		elems[j] = jsonrpc.BatchElem{Method: "add", Params: []int64{xs[j], 1}, Result: &sums[j]}
	}
	if err := c.peer.Batch(ctx, elems); err != nil {
		c.fail(t, "batch: %v", err)
	}
	for j := range elems {
		if elems[j].Error != nil || sums[j] != xs[j]+1 {
			c.fail(t, "batch element add(%d, 1) = %d, %v", xs[j], sums[j], elems[j].Error)
		}
	}
	c.batches.Add(1)
}

func (c *soakClient) callback(t *testing.T, ctx context.Context, x int64) {
	var got int64
	if err := c.peer.Call(ctx, "callback", []int64{x}, &got); err != nil {
		c.fail(t, "callback(%d): %v", x, err)
	} else if got != 3*x+1 {
		c.fail(t, "callback(%d) = %d: another call's result", x, got)
	}
	c.callbacks.Add(1)
}

// churn does a little of everything on a short-lived connection, then
// checks its ticks and closes it.
func (c *soakClient) churn(t *testing.T, ctx context.Context) {
	var k int64
	next := func() int64 { k++; return c.operand(soakWorkers, k) }
	for range 3 {
		c.add(t, ctx, next())
	}
	c.batch(t, ctx, next)
	c.callback(t, ctx, next())
	c.checkTicks(t, false, 0)
	c.close(t)
}

// checkTicks checks the ticks received: from the one sent right after the
// client joined, each following the last; all to sent-1 when complete.
func (c *soakClient) checkTicks(t *testing.T, complete bool, sent int64) {
	first, last := c.first.Load(), c.last.Load()
	switch {
	case c.outOfOrder.Load() != 0:
		t.Errorf("client %d: tick %d out of order", c.token, c.outOfOrder.Load()-1)
	case first >= 0 && first != c.joinSeq:
		t.Errorf("client %d joined before tick %d but got tick %d first", c.token, c.joinSeq, first)
	case complete && (first != c.joinSeq || last != sent-1):
		t.Errorf("client %d got ticks %d to %d, want %d to %d", c.token, first, last, c.joinSeq, sent-1)
	}
}

func (c *soakClient) close(t *testing.T) {
	c.peer.Close()
	done := make(chan error, 1)
	go func() { done <- c.peer.Wait() }()
	select {
	case c.waitErr = <-done:
	case <-time.After(30 * time.Second):
		t.Errorf("client %d: Wait hung after Close", c.token)
	}
	c.peer = nil
}

// checkAccounts checks that every call of the client, and every callback
// to it, had exactly one outcome on each side.
func (c *soakClient) checkAccounts(t *testing.T, r serverResult, ok bool) {
	outIDs, outOnce := c.out.summary()
	inIDs, inOnce := c.in.summary()
	made := c.calls.Load() + c.batches.Load()*soakBatch + c.callbacks.Load() + 1 // and join
	switch {
	case !ok:
		t.Errorf("client %d: the server has no record of its connection", c.token)
	case !outOnce || int64(outIDs) != made:
		t.Errorf("client %d: %d calls made, %d ids counted, each once: %v", c.token, made, outIDs, outOnce)
	case !inOnce || int64(inIDs) != c.callbacks.Load():
		t.Errorf("client %d: %d callbacks, %d served, each once: %v", c.token, c.callbacks.Load(), inIDs, inOnce)
	case !r.inOnce || r.inIDs != outIDs:
		t.Errorf("client %d: made %d calls, the server served %d, each once: %v", c.token, outIDs, r.inIDs, r.inOnce)
	case !r.outOnce || r.outIDs != inIDs:
		t.Errorf("client %d: served %d callbacks, the server made %d, each once: %v", c.token, inIDs, r.outIDs, r.outOnce)
	case c.waitErr != nil:
		t.Errorf("client %d: Wait = %v after Close, want nil", c.token, c.waitErr)
	}
	// The server's Wait is not checked: when the client closes while the
	// server writes to it (a tick), the server's write may fail before its
	// read loop sees the close frame, and the end is then reported as a
	// write failure. The summary counts these unclean ends.
}
