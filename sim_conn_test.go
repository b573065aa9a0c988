package jsonrpc_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
	"github.com/peerwire/jsonrpc/ws"
)

// The transports of the simulation, and the Conn that injects its read
// faults.

// simCarrier is a connected pair of Conns and what carries them.
type simCarrier struct {
	conns   [2]jsonrpc.Conn
	abrupt  [2]func() error // closes what carries side i's Conn, under it
	drop    [2]func() error // drops it when a close handshake goes unanswered
	cleanup func()
}

// simConnect connects two Conns over tr, side i's with message cap
// caps[i] (0: the transport's default).
func simConnect(tr simTransport, ping time.Duration, caps [2]int) (*simCarrier, error) {
	switch tr {
	case simPipe:
		a, b := jsonrpc.Pipe()
		return &simCarrier{conns: [2]jsonrpc.Conn{a, b}, abrupt: [2]func() error{a.Close, b.Close}, cleanup: func() {}}, nil
	case simLineNetPipe, simHeaderNetPipe:
		x, y := net.Pipe()
		return simStdio(x, y, tr == simLineNetPipe, caps), nil
	case simLineTCP, simHeaderTCP:
		x, y, err := simTCPPair()
		if err != nil {
			return nil, err
		}
		return simStdio(x, y, tr == simLineTCP, caps), nil
	case simWS:
		return simWSPair(ping, caps)
	}
	panic("unknown transport")
}

func simStdio(x, y net.Conn, line bool, caps [2]int) *simCarrier {
	var so [2]stdio.Options
	for i := range so {
		so[i] = stdio.Options{Framing: stdio.Header, MaxMessageSize: int64(caps[i])}
		if line {
			so[i].Framing = stdio.Line
		}
	}
	return &simCarrier{
		conns:   [2]jsonrpc.Conn{stdio.NewConn(x, x, so[0]), stdio.NewConn(y, y, so[1])},
		abrupt:  [2]func() error{x.Close, y.Close},
		cleanup: func() {},
	}
}

// simTCPPair returns the two ends of a loopback TCP connection.
func simTCPPair() (net.Conn, net.Conn, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	x, err := net.Dial("tcp", ln.Addr().String())
	y := <-accepted
	if err != nil || y == nil {
		if x != nil {
			x.Close()
		}
		if y != nil {
			y.Close()
		}
		return nil, nil, errors.Join(err, errors.New("accept failed"))
	}
	return x, y, nil
}

// simWSPair connects a ws.Conn made by ws.NewConn over coder/websocket's
// Dial (side a) to one made by ws.Server.Accept (side b), over loopback
// TCP, and keeps both TCP connections for the abrupt fault.
func simWSPair(ping time.Duration, caps [2]int) (*simCarrier, error) {
	var wos [2]ws.Options
	for i := range wos {
		wos[i] = ws.Options{PingInterval: ping, MaxMessageSize: int64(caps[i])}
		if ping > 0 {
			wos[i].PingTimeout = time.Second // longer than any pause of the plan
		}
	}
	wo := wos[0]
	srv := &ws.Server{Conn: wos[1]}
	accepted := make(chan *ws.Conn, 1)
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := srv.Accept(w, r)
		accepted <- c
	}))
	var mu sync.Mutex
	var raws [2]net.Conn
	hs.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateHijacked {
			mu.Lock()
			raws[1] = c
			mu.Unlock()
		}
	}
	hs.Start()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		mu.Lock()
		raws[0] = c
		mu.Unlock()
		return c, err
	}}
	cleanup := func() { tr.CloseIdleConnections(); hs.Close() }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wc, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		cleanup()
		return nil, err
	}
	b := <-accepted
	if b == nil {
		wc.CloseNow()
		cleanup()
		return nil, errors.New("ws: accept failed")
	}
	mu.Lock()
	defer mu.Unlock()
	return &simCarrier{
		conns:   [2]jsonrpc.Conn{ws.NewConn(wc, wo), b},
		abrupt:  [2]func() error{raws[0].Close, raws[1].Close},
		drop:    [2]func() error{raws[0].Close, nil}, // b's Accept keeps its own
		cleanup: cleanup,
	}, nil
}

// simConn is the Conn a Peer of the simulation gets: it samples the Peer's
// memory on every Read and Write (invariant 2), and paces Read as the
// side's plan says (not reading, or reading slowly, for a while).
type simConn struct {
	inner  jsonrpc.Conn
	rn     *simRun
	side   int
	drop   func() error
	closed chan struct{}
	once   sync.Once
}

// simWrap wraps inner for side s, keeping the optional interfaces it has.
func simWrap(rn *simRun, s int, inner jsonrpc.Conn, drop func() error) jsonrpc.Conn {
	c := &simConn{inner: inner, rn: rn, side: s, drop: drop, closed: make(chan struct{})}
	w, isW := inner.(jsonrpc.Watcher)
	l, isL := inner.(jsonrpc.Limiter)
	switch {
	case isW && isL:
		return struct {
			*simConn
			jsonrpc.Watcher
			jsonrpc.Limiter
		}{c, w, l}
	case isW:
		return struct {
			*simConn
			jsonrpc.Watcher
		}{c, w}
	case isL:
		return struct {
			*simConn
			jsonrpc.Limiter
		}{c, l}
	}
	return c
}

func (c *simConn) Read() ([]byte, error) {
	c.rn.sample(c.side, nil)
	c.pace()
	return c.inner.Read()
}

func (c *simConn) Write(msg []byte) error {
	c.rn.sample(c.side, msg)
	return c.inner.Write(msg)
}

// Close closes the inner Conn. A Conn made by ws.NewConn may wait 5 s for
// an unanswered close frame; after 1 s its TCP connection is dropped, as
// ws.Dial's Conns do.
func (c *simConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	if c.drop != nil {
		t := time.AfterFunc(time.Second, func() { c.drop() })
		defer t.Stop()
	}
	return c.inner.Close()
}

// pace holds a Read back while a window of the side's plan is open: until
// its end when it stops reading, by its delay when it reads slowly. A
// local Close ends the wait, and so does a Watcher's Gone, after which the
// Peer expects Read to return at once.
func (c *simConn) pace() {
	now := time.Since(c.rn.start)
	for _, w := range c.rn.plan.sides[c.side].pauses {
		if now < w.at || now >= w.at+w.dur {
			continue
		}
		d := w.delay
		if d == 0 {
			d = w.at + w.dur - now
		}
		var gone <-chan struct{}
		if wt, ok := c.inner.(jsonrpc.Watcher); ok {
			gone = wt.Gone()
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.closed:
		case <-gone:
		}
		return
	}
}

// pausedAfter returns how long side s's plan keeps it from reading after
// t: the windows that end later, in full.
func (p *simPlan) pausedAfter(s int, t time.Duration) time.Duration {
	var d time.Duration
	for _, w := range p.sides[s].pauses {
		if w.at+w.dur > t {
			d += w.dur
		}
	}
	return d
}
