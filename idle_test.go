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

// TestIdlePeerHeap: an idle Peer (nothing read or sent yet) keeps at most
// 2,450 bytes of heap besides its Conn, read through the runtime's
// live-heap metric over 1,000 of them: its struct, channels, context and
// read loop goroutine. On c381bbe it kept 2,704: the two dispatcher lanes'
// and the writer's wake-up channels were made for every Peer though only a
// runner or a writer that lingers needs one, and the Peer took the
// 1,280-byte size class (2,368 now, on Go 1.26.8 and 1.27.3).
func TestIdlePeerHeap(t *testing.T) {
	const n = 1000
	live := func() uint64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
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
	if per > 2450 {
		t.Fatalf("an idle Peer keeps %d bytes of heap, over its budget of 2,450", per)
	}
}
