package jsonrpc

import (
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"unsafe"
)

// TestPeerSizeClass: a Peer fits the 1,152-byte size class. At 1,160 bytes
// (c381bbe, three fields' padding) it took the 1,280-byte class: 128 bytes
// more on every connection a server holds. A field that pushes it over
// costs every idle connection that much: move rarely used state behind a
// pointer made on first need instead, or raise this with the measured cost
// in docs/performance.md ("Idle connections").
func TestPeerSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(Peer{}); n > 1152 {
		t.Fatalf("Peer is %d bytes: over the 1,152-byte size class", n)
	}
}

// idleConn is a Conn on which nothing ever arrives until it is closed.
type idleConn struct {
	once sync.Once
	done chan struct{}
}

func newIdleConn() *idleConn { return &idleConn{done: make(chan struct{})} }

func (c *idleConn) Read() ([]byte, error) { <-c.done; return nil, io.EOF }
func (c *idleConn) Write([]byte) error    { return nil }
func (c *idleConn) Close() error          { c.once.Do(func() { close(c.done) }); return nil }

// idlePeerHeapBudget is the live heap an idle Peer that has read nothing
// may keep besides its Conn, its read loop's goroutine struct not counted
// (the runtime reuses those of ended goroutines): 1,867-1,880 bytes measured.
const idlePeerHeapBudget = 2000

// warmGoroutines makes n goroutine structs that the runtime then reuses,
// so that a heap figure does not count the goroutines it starts: run alone,
// a test would count them, after other tests it would not.
func warmGoroutines(n int) {
	var warm sync.WaitGroup
	release := make(chan struct{})
	for range n {
		warm.Go(func() { <-release })
	}
	close(release)
	warm.Wait()
}

// TestIdlePeerHeap: an idle Peer (nothing read or sent yet) keeps at most
// idlePeerHeapBudget bytes of heap besides its Conn, read through the
// runtime's live-heap metric over 1,000 of them: its struct, channels and
// context. On c381bbe it kept about 2,190 (2,704 when its goroutine
// structs were new): the two dispatcher lanes' and the writer's wake-up
// channels were made for every Peer though only a runner or a writer that
// lingers needs one, and the Peer took the 1,280-byte size class
// (TestIdlePeerHeapBudgetCatchesEagerWakeChannels holds that this budget
// catches them).
func TestIdlePeerHeap(t *testing.T) {
	const n = 1000
	live := func() uint64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	warmGoroutines(2 * n)
	conns := make([]*idleConn, n)
	for i := range conns {
		conns[i] = newIdleConn()
	}
	mux := NewMux()
	peers := make([]*Peer, 0, n)
	before := live()
	for _, c := range conns {
		peers = append(peers, NewPeer(c, Options{Handler: mux}))
	}
	after := live()
	per := int(after-before) / n
	for _, p := range peers {
		p.Close()
	}
	for _, p := range peers {
		p.Wait()
	}
	t.Logf("%d bytes of heap per idle Peer", per)
	if per > idlePeerHeapBudget {
		t.Fatalf("an idle Peer keeps %d bytes of heap, over its budget of %d", per, idlePeerHeapBudget)
	}
}
