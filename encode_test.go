package jsonrpc

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// steadyConn wraps a Conn and checks that no message changes while its
// Write runs: the Peer encodes messages into pooled buffers, and one must
// not be reused before the Write that carries it has returned.
type steadyConn struct {
	Conn
	changed atomic.Int64
}

func (c *steadyConn) Write(msg []byte) error {
	before := bytes.Clone(msg)
	time.Sleep(20 * time.Microsecond) // give another goroutine time to reuse it
	if !bytes.Equal(before, msg) {
		c.changed.Add(1)
	}
	return c.Conn.Write(msg)
}

// TestPooledMessagesNotReusedWhileWritten: many goroutines call and notify
// across a pair of Peers whose Conns check every message they write; each
// call gets its own echo back, and no message changed during its write.
func TestPooledMessagesNotReusedWhileWritten(t *testing.T) {
	c1, c2 := Pipe()
	s1, s2 := &steadyConn{Conn: c1}, &steadyConn{Conn: c2}
	m := NewMux()
	Register(m, "echo", func(_ context.Context, p []string) ([]string, error) { return p, nil })
	m.Handle("note", HandlerFunc(func(context.Context, *Request) (any, error) { return nil, nil }))
	a, b := NewPeer(s1, Options{Handler: m}), NewPeer(s2, Options{Handler: m})
	cleanupPeer(t, a)
	cleanupPeer(t, b)
	ctx := testCtx(t, wait)
	const workers, calls = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := []*Peer{a, b}[w%2]
			for i := range calls {
				want := fmt.Sprintf("w%d-c%d-%s", w, i, bytes.Repeat([]byte{'x'}, i*40))
				var got []string
				if err := from.Call(ctx, "echo", []string{want}, &got); err != nil || len(got) != 1 || got[0] != want {
					errs <- fmt.Errorf("worker %d call %d: %q, %v", w, i, got, err)
					return
				}
				if err := from.Notify(ctx, "note", []int{i}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := s1.changed.Load() + s2.changed.Load(); n > 0 {
		t.Errorf("%d messages changed while being written", n)
	}
}
