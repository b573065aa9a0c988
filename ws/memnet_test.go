//go:build !js

package ws_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// An in-memory network for tests in a testing/synctest bubble, where time
// is fake: a 45 s push-back takes microseconds. net.Pipe will not do for
// push-back, since it buffers nothing: a write waits for the reader, where
// a socket takes what fits in its buffers. memConn buffers up to memBuffer
// bytes each way, and waits on a sync.Cond, which a bubble counts as
// durably blocked, so that fake time moves on while both ends wait.

// memBuffer is how many bytes each direction holds unread, about what a
// loopback TCP connection's buffers hold before autotuning grows them.
const memBuffer = 256 << 10

// memStream is one direction of a memConn.
type memStream struct {
	mu       sync.Mutex
	cond     *sync.Cond
	buf      []byte
	rclosed  bool // the reading end closed: writes fail
	wclosed  bool // the writing end closed: reads get io.EOF once drained
	rdl, wdl time.Time
	rtimer   *time.Timer
	wtimer   *time.Timer
}

func newMemStream() *memStream {
	s := &memStream{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func expired(deadline time.Time) bool {
	return !deadline.IsZero() && !time.Now().Before(deadline)
}

func (s *memStream) read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case s.rclosed:
			return 0, net.ErrClosed
		case len(s.buf) > 0:
			n := copy(p, s.buf)
			s.buf = s.buf[n:]
			s.cond.Broadcast()
			return n, nil
		case s.wclosed:
			return 0, io.EOF
		case expired(s.rdl):
			return 0, os.ErrDeadlineExceeded
		}
		s.cond.Wait()
	}
}

func (s *memStream) write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for len(p) > 0 {
		switch {
		case s.wclosed:
			return n, net.ErrClosed
		case s.rclosed:
			return n, io.ErrClosedPipe // as a reset would
		case expired(s.wdl):
			return n, os.ErrDeadlineExceeded
		}
		if room := memBuffer - len(s.buf); room > 0 {
			k := min(room, len(p))
			s.buf = append(s.buf, p[:k]...)
			p, n = p[k:], n+k
			s.cond.Broadcast()
			continue
		}
		s.cond.Wait()
	}
	return n, nil
}

// setDeadline sets *dl and wakes whoever waits, now and when it passes.
func (s *memStream) setDeadline(dl *time.Time, timer **time.Timer, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*dl = t
	if *timer != nil {
		(*timer).Stop()
		*timer = nil
	}
	if d := time.Until(t); !t.IsZero() && d > 0 {
		*timer = time.AfterFunc(d, func() {
			s.mu.Lock()
			s.cond.Broadcast()
			s.mu.Unlock()
		})
	}
	s.cond.Broadcast()
}

func (s *memStream) close(reading bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if reading {
		s.rclosed = true
		s.buf = nil
	} else {
		s.wclosed = true
	}
	for _, t := range []*time.Timer{s.rtimer, s.wtimer} {
		if t != nil {
			t.Stop()
		}
	}
	s.cond.Broadcast()
}

// memConn is one end of an in-memory connection.
type memConn struct {
	in, out   *memStream
	closeOnce sync.Once
}

// memPipe returns the two ends of an in-memory connection.
func memPipe() (*memConn, *memConn) {
	a, b := newMemStream(), newMemStream()
	return &memConn{in: a, out: b}, &memConn{in: b, out: a}
}

func (c *memConn) Read(p []byte) (int, error)  { return c.in.read(p) }
func (c *memConn) Write(p []byte) (int, error) { return c.out.write(p) }
func (c *memConn) Close() error {
	c.closeOnce.Do(func() { c.in.close(true); c.out.close(false) })
	return nil
}
func (c *memConn) LocalAddr() net.Addr  { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr { return memAddr{} }
func (c *memConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}
func (c *memConn) SetReadDeadline(t time.Time) error {
	c.in.setDeadline(&c.in.rdl, &c.in.rtimer, t)
	return nil
}
func (c *memConn) SetWriteDeadline(t time.Time) error {
	c.out.setDeadline(&c.out.wdl, &c.out.wtimer, t)
	return nil
}

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem:1" }

// memListener hands out the server ends of the connections dialed to it.
type memListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *memListener) Addr() net.Addr { return memAddr{} }

// dial connects to l.
func (l *memListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := memPipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// memServer is a ws.Server on the in-memory network, for a test running
// in a synctest bubble.
type memServer struct {
	srv   *ws.Server
	hs    *http.Server
	ln    *memListener
	tr    *http.Transport
	peers chan *jsonrpc.Peer
	serve chan error
}

// startMemServer serves srv on an in-memory listener until the test ends.
func startMemServer(t *testing.T, srv *ws.Server) *memServer {
	ms := &memServer{
		srv:   srv,
		ln:    newMemListener(),
		peers: make(chan *jsonrpc.Peer, 8),
		serve: make(chan error, 1),
	}
	srv.OnConnect = func(p *jsonrpc.Peer, _ *http.Request) { ms.peers <- p }
	ms.hs = &http.Server{Handler: srv}
	ms.tr = &http.Transport{DialContext: ms.ln.dial}
	go func() { ms.serve <- ms.hs.Serve(ms.ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Server.Shutdown: %v", err)
		}
		ms.hs.Close()
		if err := <-ms.serve; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		ms.tr.CloseIdleConnections()
	})
	return ms
}

// dial connects a client Peer with opts, closed when the test ends, and
// returns it with the server's Peer of its connection.
func (ms *memServer) dial(t *testing.T, opts ws.DialOptions) (client, server *jsonrpc.Peer) {
	t.Helper()
	opts.HTTPClient = &http.Client{Transport: ms.tr}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	client, err := ws.Dial(ctx, "ws://mem/rpc", opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { client.Close(); client.Wait() })
	select {
	case server = <-ms.peers:
	case <-ctx.Done():
		t.Fatal("no connection reached the server")
	}
	return client, server
}
