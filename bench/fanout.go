package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// Fleet is one server with many WebSocket clients connected to it, for
// the broadcast (W5) and idle-memory workloads.
type Fleet struct {
	// Broadcast sends one tick notification from the server to every
	// client; each client counts it in the Service given to the setup.
	Broadcast func() error
	// Stop closes every connection and the server.
	Stop func()
}

// FleetImpl starts a Fleet of n clients.
type FleetImpl interface {
	Name() string
	StartFleet(tb testing.TB, svc *Service, n int) *Fleet
}

// FleetImpls lists the fleets: this library (ws.Server, jsonrpc.Group,
// with ws.Dial clients and with raw ones), raw coder/websocket, and
// centrifuge.
func FleetImpls() []FleetImpl {
	return []FleetImpl{OursFleet{}, OursFleet{RawClients: true}, RawFleet{}, CentrifugeFleet{}}
}

// parallel runs f(0..n-1) on a few goroutines and returns the first error.
func parallel(n, workers int, f func(i int) error) error {
	var (
		next  atomic.Int64
		first atomic.Pointer[error]
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || first.Load() != nil {
					return
				}
				if err := f(i); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		return *e
	}
	return nil
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

const dialWorkers = 16

// OursFleet: ws.Server adds each Peer to a jsonrpc.Group in OnConnect;
// clients are ws.Dial Peers serving the tick method, or with RawClients
// coder/websocket readers that count messages, as RawFleet's do, so that
// what is measured is the server alone (centrifuge's clients are as lean).
type OursFleet struct{ RawClients bool }

func (f OursFleet) Name() string {
	if f.RawClients {
		return "ours-ws-rawclients"
	}
	return "ours-ws"
}

func (f OursFleet) StartFleet(tb testing.TB, svc *Service, n int) *Fleet {
	var group jsonrpc.Group
	var connected atomic.Int64
	srv := &ws.Server{
		MaxConnections: n + 100,
		OnConnect: func(p *jsonrpc.Peer, _ *http.Request) {
			group.Add(p)
			connected.Add(1)
		},
	}
	addr, closeHTTP := HTTPServer(tb, srv)
	mux := OursMux(svc)
	peers := make([]*jsonrpc.Peer, n)
	raws := make([]*websocket.Conn, n)
	var wg sync.WaitGroup
	closeAll := func() {
		parallel(n, dialWorkers, func(i int) error {
			if peers[i] != nil {
				peers[i].Close()
			}
			if raws[i] != nil {
				raws[i].Close(websocket.StatusNormalClosure, "")
			}
			return nil
		})
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		closeHTTP()
	}
	err := parallel(n, dialWorkers, func(i int) error {
		if f.RawClients {
			c, _, err := websocket.Dial(context.Background(), "ws://"+addr+"/", nil)
			if err != nil {
				return err
			}
			raws[i] = c
			wg.Add(1)
			go func() {
				defer wg.Done()
				countMessages(c, svc)
			}()
			return nil
		}
		p, err := ws.Dial(context.Background(), "ws://"+addr+"/", ws.DialOptions{Peer: jsonrpc.Options{Handler: mux}})
		peers[i] = p
		return err
	})
	if err == nil && !waitFor(10*time.Second, func() bool { return connected.Load() == int64(n) }) {
		err = fmt.Errorf("only %d of %d clients connected", connected.Load(), n)
	}
	if err != nil {
		closeAll()
		tb.Fatal(err)
	}
	tick := TickParams{1}
	return &Fleet{
		Broadcast: func() error { return group.Notify(MethodTick, tick) },
		Stop:      closeAll,
	}
}

// countMessages reads c until it fails, counting each message as a tick.
func countMessages(c *websocket.Conn, svc *Service) {
	buf := make([]byte, 0, 128)
	for {
		_, rd, err := c.Reader(context.Background())
		if err != nil {
			return
		}
		if buf, err = readMsg(rd, buf); err != nil {
			return
		}
		svc.Tick()
	}
}

// RawFleet: coder/websocket on both ends; the server writes the fixed
// tick bytes to each connection in turn, each client counts messages.
type RawFleet struct{}

func (RawFleet) Name() string { return "raw-ws" }

func (RawFleet) StartFleet(tb testing.TB, svc *Service, n int) *Fleet {
	var (
		mu    sync.Mutex
		conns []*websocket.Conn
		wg    sync.WaitGroup
	)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		// Read so that control frames (close) are handled.
		for {
			if _, _, err := c.Reader(context.Background()); err != nil {
				c.CloseNow()
				return
			}
		}
	})
	addr, closeHTTP := HTTPServer(tb, h)
	clients := make([]*websocket.Conn, n)
	closeAll := func() {
		parallel(n, dialWorkers, func(i int) error {
			if clients[i] != nil {
				clients[i].CloseNow()
			}
			return nil
		})
		wg.Wait()
		closeHTTP()
	}
	err := parallel(n, dialWorkers, func(i int) error {
		c, _, err := websocket.Dial(context.Background(), "ws://"+addr+"/", nil)
		if err != nil {
			return err
		}
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			countMessages(c, svc)
		}()
		return nil
	})
	if err == nil && !waitFor(10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(conns) == n }) {
		err = fmt.Errorf("only %d of %d clients connected", len(conns), n)
	}
	if err != nil {
		closeAll()
		tb.Fatal(err)
	}
	ctx := context.Background()
	return &Fleet{
		Broadcast: func() error {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				if err := c.Write(ctx, websocket.MessageText, Raw.Req[rawTick]); err != nil {
					return err
				}
			}
			return nil
		},
		Stop: closeAll,
	}
}

// MaxPeersForFDs raises the open-file soft limit to the hard limit and
// returns how many in-process connections (two descriptors each) fit
// under it, at most want.
func MaxPeersForFDs(want int) (n int, limit uint64) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return want, 0
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	open := 0
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = len(ents)
	}
	avail := (int(rl.Cur) - open - 64) / 2 // headroom for the listener and the runtime
	return max(0, min(want, avail)), rl.Cur
}

// MemInUse returns heap and goroutine-stack bytes in use after a GC.
func MemInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}
