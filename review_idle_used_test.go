package jsonrpc

import (
	"context"
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// oneCallConn delivers one call and one notification, then nothing until
// it is closed; it counts the messages written to it.
type oneCallConn struct {
	once    sync.Once
	done    chan struct{}
	reads   atomic.Int32
	written *atomic.Int64
}

func (c *oneCallConn) Read() ([]byte, error) {
	switch c.reads.Add(1) {
	case 1:
		return []byte(`{"jsonrpc":"2.0","method":"hello","params":{}}`), nil
	case 2:
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"hello","params":{}}`), nil
	}
	<-c.done
	return nil, io.EOF
}
func (c *oneCallConn) Write([]byte) error { c.written.Add(1); return nil }
func (c *oneCallConn) Close() error       { c.once.Do(func() { close(c.done) }); return nil }

// idlePeerAfterCallBudget is the live heap an idle Peer keeps once it has
// served a notification and a call (2,787 bytes measured): more than one
// that never read (idlePeerHeapBudget), by what serving keeps for the
// next request: the map of calls by id (empty), the lanes' and the send
// queue's arrays, the decoder's method names.
const idlePeerAfterCallBudget = 2900

// TestIdlePeerHeapAfterOneCall: a Peer that has served one notification
// and one call and is idle again (every runner and writer gone), as every
// real server connection is once its client has subscribed, keeps at most
// idlePeerAfterCallBudget bytes. The review found 3,002-3,019 against the
// 2,450 budget then claimed for every idle Peer: the wake-up channels that
// the first lingering runners and writer made were kept for the Peer's
// life; now the last runner or the writer to exit drops them.
func TestIdlePeerHeapAfterOneCall(t *testing.T) {
	const n = 1000
	live := func() uint64 {
		runtime.GC()
		runtime.GC() // and the sync.Pools' victim caches
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	mux := NewMux()
	Register(mux, "hello", func(context.Context, struct{}) (string, error) { return "hi", nil })
	var written atomic.Int64
	conns := make([]*oneCallConn, n)
	for i := range conns {
		conns[i] = &oneCallConn{done: make(chan struct{}), written: &written}
	}
	// Goroutine structs, once made, stay on the heap for reuse: make the
	// runners' and writers' beforehand so that they are not counted.
	var warm sync.WaitGroup
	release := make(chan struct{})
	for range 4 * n {
		warm.Go(func() { <-release })
	}
	close(release)
	warm.Wait()
	peers := make([]*Peer, 0, n)
	before := live()
	base := runtime.NumGoroutine()
	for _, c := range conns {
		peers = append(peers, NewPeer(c, Options{Handler: mux}))
	}
	defer func() {
		for _, p := range peers {
			p.Close()
		}
		for _, p := range peers {
			p.Wait()
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	// Every reply written, and every runner and writer gone (one
	// goroutine left per Peer: its read loop).
	for (written.Load() < n || runtime.NumGoroutine() > base+n) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if written.Load() < n || runtime.NumGoroutine() > base+n {
		t.Fatalf("%d of %d replies written, %d goroutines over %d read loops", written.Load(), n, runtime.NumGoroutine()-base, n)
	}
	per := int(live()-before) / n
	t.Logf("%d bytes of heap per idle Peer that served one notification and one call", per)
	if per > idlePeerAfterCallBudget {
		t.Fatalf("an idle Peer that served one call keeps %d bytes of heap, over its budget of %d", per, idlePeerAfterCallBudget)
	}
}
