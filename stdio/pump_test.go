package stdio

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"go.uber.org/goleak"
)

// gate is a reader and a writer that is not an io.Closer: its Read and
// Write block until the test opens it, and then succeed (a Read returns one
// space), so that only the Conn's closing can end the goroutine calling them.
type gate struct {
	entered chan struct{} // receives once per call that started blocking
	open    chan struct{} // closed by the test to release the calls
}

func newGate() *gate {
	return &gate{entered: make(chan struct{}, 16), open: make(chan struct{})}
}

func (g *gate) wait() {
	g.entered <- struct{}{}
	<-g.open
}

func (g *gate) Read(b []byte) (int, error) {
	g.wait()
	return copy(b, " "), nil
}

func (g *gate) Write(b []byte) (int, error) {
	g.wait()
	return len(b), nil
}

// entry waits until a call is blocked in g.
func (g *gate) entry(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("nothing called the underlying reader or writer")
	}
}

// TestCloseUnblocksReadOfUncloseableReader is issue 9: a Peer on a Conn
// whose reader is not an io.Closer never finished Close, which waits for its
// read loop, stuck in the reader's Read. Close must return within a second,
// and the goroutine the Conn reads on must end once the reader returns.
func TestCloseUnblocksReadOfUncloseableReader(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, f := range framings {
		t.Run(f.String(), func(t *testing.T) {
			g := newGate()
			defer close(g.open) // the pump ends once the reader returns
			p := jsonrpc.NewPeer(NewConn(g, io.Discard, Options{Framing: f}))
			g.entry(t)
			within(t, time.Second, "Peer.Close", func() { p.Close() })
		})
	}
}

// TestCloseUnblocksConnReadOfUncloseableReader pins the same at the Conn's
// level: a pending Read returns a closed error, and so does every later one,
// without calling the reader again.
func TestCloseUnblocksConnReadOfUncloseableReader(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g := newGate()
	defer close(g.open)
	c := NewConn(g, nil)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read()
		done <- err
	}()
	g.entry(t)
	within(t, time.Second, "Close", func() { c.Close() })
	select {
	case err := <-done:
		if !isClosedErr(err) {
			t.Errorf("Read error = %v, want a closed error", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Read still blocked a second after Close")
	}
	if _, err := c.Read(); !isClosedErr(err) {
		t.Errorf("Read after Close = %v, want a closed error", err)
	}
	if len(g.entered) != 0 {
		t.Error("Read after Close called the reader")
	}
}

// TestCloseUnblocksWriteToUncloseableWriter: a Write blocked in a writer
// that is not an io.Closer (a remote that stopped reading, behind a wrapper)
// returns a closed error within a second of Close, and so does a Notify of
// a Peer on the Conn; the goroutine the Conn writes on ends once the writer
// returns.
func TestCloseUnblocksWriteToUncloseableWriter(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Run("Conn", func(t *testing.T) {
		g := newGate()
		defer close(g.open)
		c := NewConn(nil, g)
		done := make(chan error, 1)
		go func() { done <- c.Write([]byte("{}")) }()
		g.entry(t)
		within(t, time.Second, "Close", func() { c.Close() })
		select {
		case err := <-done:
			if !isClosedErr(err) {
				t.Errorf("Write error = %v, want a closed error", err)
			}
		case <-time.After(time.Second):
			t.Fatal("Write still blocked a second after Close")
		}
		if err := c.Write([]byte("{}")); !isClosedErr(err) {
			t.Errorf("Write after Close = %v, want a closed error", err)
		}
	})
	t.Run("Peer", func(t *testing.T) {
		g := newGate()
		defer close(g.open)
		pr, pw := io.Pipe()
		defer pw.Close()
		p := jsonrpc.NewPeer(NewConn(pr, g))
		done := make(chan error, 1)
		go func() { done <- p.Notify(context.Background(), "note", nil) }()
		g.entry(t)
		within(t, time.Second, "Peer.Close", func() { p.Close() })
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Fatal("Notify still blocked a second after Close")
		}
		within(t, time.Second, "Peer.Wait", func() { p.Wait() })
	})
}
