//go:build !js

package ws_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// The promise under test: when the TCP connection under a WebSocket Peer
// fails (reset, or closed without a close frame, cut in the middle of a
// frame, cut under a blocked write), every pending Call and Batch on either
// side returns within faultBound with an error wrapping jsonrpc.ErrClosed and
// the cause, and Wait returns the cause.

// faultBound is how soon after a fault every waiting caller must return.
const faultBound = time.Second

// outcome is what one waiting operation returned, and when.
type outcome struct {
	what string
	err  error
	at   time.Time
}

// causeCheck tells whether an error carries the expected cause.
type causeCheck struct {
	name string
	is   func(error) bool
}

func wraps(target error) causeCheck {
	return causeCheck{fmt.Sprintf("wrapping %q", target), func(err error) bool { return errors.Is(err, target) }}
}

// lostWithoutCloseFrame is the cause of a TCP connection that ended without
// a close frame: ws reports it as ErrConnectionLost, with the io.EOF of the
// stream left out of the chain so that the end is not taken for a clean one.
var lostWithoutCloseFrame = causeCheck{"wrapping ErrConnectionLost, not io.EOF", func(err error) bool {
	return errors.Is(err, ws.ErrConnectionLost) && !errors.Is(err, io.EOF) &&
		websocket.CloseStatus(err) == -1
}}

// resetSeen is the cause of a connection the other end reset: usually the
// read sees ECONNRESET, but if the reset races a read that had just drained
// the socket, the kernel may report the end of the stream instead (seen
// here once in a few dozen runs on loopback), which ws reports as lost.
var resetSeen = causeCheck{"wrapping ECONNRESET, or lost without a close frame", func(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || lostWithoutCloseFrame.is(err)
}}

// checkFailed checks that o failed with ErrClosed and the cause, within
// faultBound of the fault.
func checkFailed(t *testing.T, o outcome, cause causeCheck, fault time.Time) {
	t.Helper()
	if !errors.Is(o.err, jsonrpc.ErrClosed) || !cause.is(o.err) {
		t.Errorf("%s = %v, want ErrClosed %s", o.what, o.err, cause.name)
	}
	if d := o.at.Sub(fault); d > faultBound {
		t.Errorf("%s returned %v after the fault, want within %v", o.what, d, faultBound)
	}
}

// waitFailed checks that p's Wait returns the cause within faultBound.
func waitFailed(t *testing.T, name string, p *jsonrpc.Peer, cause causeCheck) {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- p.Wait() }()
	select {
	case err := <-ch:
		if err == nil || !cause.is(err) {
			t.Errorf("%s Wait = %v, want the cause, %s", name, err, cause.name)
		}
	case <-time.After(faultBound):
		t.Fatalf("%s Wait did not return within %v of the fault", name, faultBound)
	}
}

// collect receives n outcomes.
func collect(t *testing.T, ch <-chan outcome, n int, what string) []outcome {
	t.Helper()
	out := make([]outcome, n)
	for i := range out {
		select {
		case out[i] = <-ch:
		case <-time.After(wait):
			t.Fatalf("%s: %d of %d returned", what, i, n)
		}
	}
	return out
}

// captureServerConns makes the test server hand over each TCP connection
// it accepts (the very net.Conn a WebSocket handler hijacks).
func captureServerConns(conns chan<- net.Conn) func(*httptest.Server) {
	return func(hs *httptest.Server) {
		hs.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			conns <- c
			return ctx
		}
	}
}

// capturingClient is an HTTP client that hands over each TCP connection it
// dials.
func capturingClient(t testing.TB, conns chan<- net.Conn) *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			conns <- c
		}
		return c, err
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// reset drops a TCP connection with a RST, as a crashed host or a
// middlebox would; closeTCP drops it with a FIN but no close frame.
func reset(c net.Conn)    { c.(*net.TCPConn).SetLinger(0); c.Close() }
func closeTCP(c net.Conn) { c.Close() }

// within receives from ch, failing the test if nothing comes in time.
func within[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestTCPCutMidCall drops the TCP connection under a client and a server
// Peer, from either end, by reset or by a bare close, while both have
// handlers running and calls waiting: the client's Calls and Batches wait
// for server handlers, some of which wait in Calls back to the client.
func TestTCPCutMidCall(t *testing.T) {
	for _, tc := range []struct {
		name          string
		serverSide    bool // the server's end of the TCP connection is cut
		cut           func(net.Conn)
		cutter, other causeCheck // the causes at the end cut and at the other
	}{
		{"server resets", true, reset, wraps(net.ErrClosed), resetSeen},
		{"client resets", false, reset, wraps(net.ErrClosed), resetSeen},
		{"server closes TCP", true, closeTCP, wraps(net.ErrClosed), lostWithoutCloseFrame},
		{"client closes TCP", false, closeTCP, wraps(net.ErrClosed), lostWithoutCloseFrame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3
			entered := make(chan string, 4*n)
			block := func(who string) func(context.Context, *jsonrpc.Request) (any, error) {
				return func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
					entered <- who
					<-ctx.Done()
					return nil, ctx.Err()
				}
			}
			relayed := make(chan outcome, 2*n)
			sm := testMux(t)
			sm.HandleFunc("block", block("server"))
			sm.HandleFunc("relay", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				err := jsonrpc.PeerFromContext(ctx).Call(ctx, "client.block", nil, nil)
				relayed <- outcome{"server's Call back to the client", err, time.Now()}
				return nil, err
			})
			cm := jsonrpc.NewMux()
			cm.HandleFunc("client.block", block("client"))

			serverConns, clientConns := make(chan net.Conn, 1), make(chan net.Conn, 1)
			ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: sm}}, captureServerConns(serverConns))
			client := ts.dial(t, cm, &ws.DialOptions{HTTPClient: capturingClient(t, clientConns)})
			server := ts.nextPeer(t)

			ctx := testCtx(t, wait)
			out := make(chan outcome, 3*n)
			for range n {
				go func() { out <- outcome{"Call block", client.Call(ctx, "block", nil, nil), time.Now()} }()
				go func() { out <- outcome{"Call relay", client.Call(ctx, "relay", nil, nil), time.Now()} }()
				go func() {
					err := client.Batch(ctx, []jsonrpc.BatchElem{
						{Method: "block"}, {Method: "relay"}, {Method: "echo", Params: []int{1}, Notification: true},
					})
					out <- outcome{"Batch", err, time.Now()}
				}()
			}
			for range 4 * n {
				within(t, entered, "the handlers to start")
			}

			// The end that is cut sees its own connection closed; the
			// other sees what came over the wire.
			conn := within(t, clientConns, "the client's TCP connection")
			clientCause, serverCause := tc.cutter, tc.other
			if tc.serverSide {
				conn = within(t, serverConns, "the server's TCP connection")
				clientCause, serverCause = tc.other, tc.cutter
			}
			fault := time.Now()
			tc.cut(conn)
			for _, o := range collect(t, out, 3*n, "the client's calls") {
				checkFailed(t, o, clientCause, fault)
			}
			for _, o := range collect(t, relayed, 2*n, "the server's calls back") {
				checkFailed(t, o, serverCause, fault)
			}
			waitFailed(t, "client", client, clientCause)
			waitFailed(t, "server", server, serverCause)
		})
	}
}

// TestTCPCutMidBatch: a server answers one element of a client's batch,
// then its TCP connection is reset: the Batch fails with the cause, and the
// element answered before the cut keeps its result.
func TestTCPCutMidBatch(t *testing.T) {
	passThrough := func(ctx context.Context, _ *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		return next(ctx)
	}
	for _, tc := range []struct {
		name string
		opts *jsonrpc.Options
	}{{"plain", nil}, {"intercepted", &jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{passThrough}}}} {
		t.Run(tc.name, func(t *testing.T) {
			var hwg handlerWG
			defer hwg.wait(t)
			conns := make(chan net.Conn, 1)
			cut := make(chan struct{})
			// A raw server: it answers the batch's first element alone,
			// then sends a call, then waits for the test to cut it.
			hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hwg.Add(1)
				defer hwg.Done()
				c, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				defer c.CloseNow()
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				_, msg, err := c.Read(ctx)
				var reqs []struct{ ID jsonrpcID }
				if err != nil || unmarshal(msg, &reqs) != nil || len(reqs) != 4 {
					t.Errorf("raw server read %s, %v", msg, err)
					return
				}
				c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":"zero"}`, reqs[0].ID))
				c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":"after","method":"answered"}`))
				<-cut
				c.Read(ctx) // fails: the connection was reset under it
			}))
			captureServerConns(conns)(hs)
			hs.Start()
			defer hs.Close()
			defer close(cut)

			// The client's read loop routes in order: once the call sent
			// after the reply runs, the reply has been taken.
			answered := make(chan struct{}, 1)
			cm := jsonrpc.NewMux()
			cm.HandleFunc("answered", func(context.Context, *jsonrpc.Request) (any, error) {
				answered <- struct{}{}
				return nil, nil
			})
			client, err := ws.Dial(testCtx(t, wait), "ws"+strings.TrimPrefix(hs.URL, "http"), ws.DialOptions{Peer: withHandler(tc.opts, cm), HTTPClient: hs.Client()})
			if err != nil {
				t.Fatal(err)
			}
			cleanupPeer(t, client)
			results := make([]string, 3)
			elems := []jsonrpc.BatchElem{
				{Method: "a", Result: &results[0]},
				{Method: "note", Notification: true},
				{Method: "b", Result: &results[1]},
				{Method: "c", Result: &results[2]},
			}
			done := make(chan outcome, 1)
			go func() { done <- outcome{"Batch", client.Batch(testCtx(t, wait), elems), time.Now()} }()
			within(t, answered, "the first reply to be taken")

			fault := time.Now()
			reset(within(t, conns, "the server's TCP connection"))
			checkFailed(t, within(t, done, "Batch"), resetSeen, fault)
			if elems[0].Error != nil || results[0] != "zero" {
				t.Errorf("element answered before the cut: %q, %v; want its result", results[0], elems[0].Error)
			}
			waitFailed(t, "client", client, resetSeen)
		})
	}
}

// jsonrpcID keeps an id as raw JSON.
type jsonrpcID []byte

func (id *jsonrpcID) UnmarshalJSON(b []byte) error { *id = append((*id)[:0], b...); return nil }

// rawWS is a WebSocket client written by hand over TCP, so that a test can
// send a frame cut short.
type rawWS struct {
	net.Conn
	br *bufio.Reader
}

// dialRawWS opens a TCP connection to ts and does the opening handshake.
func dialRawWS(t *testing.T, ts *testServer) *rawWS {
	t.Helper()
	c, err := net.DialTimeout("tcp", ts.hs.Listener.Addr().String(), wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(wait))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
		ts.hs.Listener.Addr())
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v, %v", resp, err)
	}
	return &rawWS{c, br}
}

// header returns the header of a masked text frame (mask key zero, so the
// payload goes as is) carrying n bytes.
func textFrameHeader(n int) []byte {
	h := []byte{0x81} // FIN, text
	switch {
	case n < 126:
		h = append(h, 0x80|byte(n))
	case n < 1<<16:
		h = append(h, 0x80|126)
		h = binary.BigEndian.AppendUint16(h, uint16(n))
	default:
		h = append(h, 0x80|127)
		h = binary.BigEndian.AppendUint64(h, uint64(n))
	}
	return append(h, 0, 0, 0, 0)
}

// send writes msg as one whole text frame.
func (r *rawWS) send(t *testing.T, msg string) {
	t.Helper()
	if _, err := r.Write(append(textFrameHeader(len(msg)), msg...)); err != nil {
		t.Fatal(err)
	}
}

// recv reads one unfragmented frame from the server.
func (r *rawWS) recv(t *testing.T) []byte {
	t.Helper()
	_, p, err := r.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readFrame reads one unfragmented frame from the server: its opcode and
// payload.
func (r *rawWS) readFrame() (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(r.br, h[:]); err != nil {
		return 0, nil, fmt.Errorf("reading a frame: %w", err)
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		io.ReadFull(r.br, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		io.ReadFull(r.br, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > 1<<20 {
		return 0, nil, fmt.Errorf("a frame of %d bytes from the server", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r.br, p); err != nil {
		return 0, nil, fmt.Errorf("reading a frame's payload: %w", err)
	}
	return h[0] & 0x0f, p, nil
}

// TestTruncatedFrame: a client's TCP connection ends in the middle of a
// frame, in its payload or in its header, while the server has a handler
// running and calls waiting for the client's replies. The server's calls
// fail with the cause (io.ErrUnexpectedEOF for a payload cut short), the
// handler's ctx ends, and Wait returns the cause.
func TestTruncatedFrame(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes []byte
		cause causeCheck
	}{
		{"in the payload", append(textFrameHeader(1000), strings.Repeat(" ", 500)...), wraps(io.ErrUnexpectedEOF)},
		{"in the extended length", textFrameHeader(1000)[:3], wraps(io.ErrUnexpectedEOF)},
		{"after the first header byte", textFrameHeader(1000)[:1], lostWithoutCloseFrame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered := make(chan struct{}, 1)
			ended := make(chan time.Time, 1)
			sm := testMux(t)
			sm.HandleFunc("block", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
				entered <- struct{}{}
				<-ctx.Done()
				ended <- time.Now()
				return nil, ctx.Err()
			})
			ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: sm}}, nil)
			c := dialRawWS(t, ts)
			server := ts.nextPeer(t)

			c.send(t, `{"jsonrpc":"2.0","id":1,"method":"block"}`)
			within(t, entered, "the handler")
			const n = 3
			out := make(chan outcome, n)
			ctx := testCtx(t, wait)
			for range n {
				go func() { out <- outcome{"server Call", server.Call(ctx, "unanswered", nil, nil), time.Now()} }()
			}
			for range n {
				c.recv(t) // the requests, which the client never answers
			}

			fault := time.Now()
			if _, err := c.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			c.Close()
			for _, o := range collect(t, out, n, "the server's calls") {
				checkFailed(t, o, tc.cause, fault)
			}
			if d := within(t, ended, "the handler's ctx to end").Sub(fault); d > faultBound {
				t.Errorf("the handler's ctx ended %v after the fault", d)
			}
			waitFailed(t, "server", server, tc.cause)
		})
	}
}

// TestTCPCutUnderBlockedWrite: the server writes to a client that stopped
// reading until a write blocks, with a call waiting for the client's reply
// and more calls, a notification and a batch queued behind the write. When
// the TCP connection is reset, or the Peer closed, all of them return at
// once: with the cause, or with ErrClosed after Close; Close itself is
// prompt.
func TestTCPCutUnderBlockedWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   func(p *jsonrpc.Peer, c net.Conn)
		cause   causeCheck
		waitNil bool
	}{
		{"TCP reset", func(_ *jsonrpc.Peer, c net.Conn) { reset(c) }, wraps(net.ErrClosed), false},
		{"Peer closed", func(p *jsonrpc.Peer, _ net.Conn) { p.Close() }, causeCheck{"", func(error) bool { return true }}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conns := make(chan net.Conn, 1)
			ts := startServer(t, &ws.Server{}, func(hs *httptest.Server) {
				captureServerConns(conns)(hs)
				capture := hs.Config.ConnContext
				smallServerBuffers(hs)
				small := hs.Config.ConnContext
				hs.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
					return small(capture(ctx, c), c)
				}
			})
			ts.stuckClient(t)
			server := ts.nextPeer(t)
			conn := within(t, conns, "the server's TCP connection")

			ctx := testCtx(t, wait)
			ops := make(chan outcome, 8)
			go func() { ops <- outcome{"Call written", server.Call(ctx, "never", nil, nil), time.Now()} }()
			// Notify until a write blocks: no progress for 100 ms.
			var progress = make(chan struct{}, 1)
			go func() {
				pad := []string{strings.Repeat("b", 1000)}
				for i := 0; i < 100_000; i++ {
					if err := server.Notify(ctx, "fill", pad); err != nil {
						ops <- outcome{"blocked Notify", err, time.Now()}
						return
					}
					select {
					case progress <- struct{}{}:
					default:
					}
				}
				ops <- outcome{"blocked Notify", errors.New("100,000 notifications written to a client that does not read"), time.Now()}
			}()
			for stalled := false; !stalled; {
				select {
				case <-progress:
				case <-time.After(100 * time.Millisecond):
					stalled = true
				case <-ctx.Done():
					t.Fatal("writes never blocked")
				}
			}
			for i := range 3 {
				go func() { ops <- outcome{fmt.Sprintf("queued Call %d", i), server.Call(ctx, "m", nil, nil), time.Now()} }()
			}
			go func() { ops <- outcome{"queued Notify", server.Notify(ctx, "n", nil), time.Now()} }()
			go func() {
				ops <- outcome{"queued Batch", server.Batch(ctx, []jsonrpc.BatchElem{{Method: "m"}}), time.Now()}
			}()
			time.Sleep(20 * time.Millisecond) // let them queue behind the blocked write

			fault := time.Now()
			tc.fault(server, conn)
			if d := time.Since(fault); d > faultBound {
				t.Errorf("the fault took %v", d)
			}
			for _, o := range collect(t, ops, 7, "the server's calls") {
				checkFailed(t, o, tc.cause, fault)
			}
			if tc.waitNil {
				if err := waitErr(t, "server Wait", server); err != nil {
					t.Errorf("server Wait after Close = %v, want nil", err)
				}
				return
			}
			waitFailed(t, "server", server, tc.cause)
		})
	}
}

// TestCloseRaceWS closes one side, or both, of WebSocket connections while
// 20 goroutines call, notify and batch from the client and call back from
// the server, for 40 rounds or a time cap: nothing panics or deadlocks, and
// every operation returns its own result or an error wrapping ErrClosed.
func TestCloseRaceWS(t *testing.T) {
	const (
		rounds     = 40
		goroutines = 20
		opsEach    = 6
		timeCap    = 4 * time.Second
	)
	cm := jsonrpc.NewMux()
	cm.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) { return r.Params, nil })
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}}, nil)
	deadline := time.Now().Add(timeCap)
	round := 0
	for ; round < rounds && time.Now().Before(deadline) && !t.Failed(); round++ {
		client := ts.dial(t, cm, nil)
		server := ts.nextPeer(t)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		check := func(what string, err error, ok bool) {
			switch {
			case err == nil && !ok:
				t.Errorf("round %d: %s: wrong result", round, what)
			case err != nil && !errors.Is(err, jsonrpc.ErrClosed):
				t.Errorf("round %d: %s = %v, want its result or ErrClosed", round, what, err)
			}
		}
		var done sync.WaitGroup
		var finished atomic.Int64
		for g := range goroutines {
			done.Add(1)
			go func() {
				defer done.Done()
				for i := range opsEach {
					want := fmt.Sprintf("[%d,%d,%d]", round, g, i)
					var got json.RawMessage
					var err error
					switch (g + i) % 4 {
					case 0:
						err = client.Call(ctx, "echo", json.RawMessage(want), &got)
						check("client Call", err, string(got) == want)
					case 1:
						err = client.Notify(ctx, "echo", json.RawMessage(want))
						check("client Notify", err, true)
					case 2:
						var r0 json.RawMessage
						elems := []jsonrpc.BatchElem{
							{Method: "echo", Params: json.RawMessage(want), Result: &r0},
							{Method: "echo", Params: json.RawMessage(want), Notification: true},
						}
						err = client.Batch(ctx, elems)
						check("client Batch", err, string(r0) == want && elems[0].Error == nil)
					case 3:
						err = server.Call(ctx, "echo", json.RawMessage(want), &got)
						check("server Call", err, string(got) == want)
					}
					finished.Add(1)
					if err != nil {
						return
					}
				}
			}()
		}
		for after := int64(rand.IntN(goroutines * opsEach / 2)); finished.Load() < after && ctx.Err() == nil; {
			runtime.Gosched()
		}
		switch round % 3 {
		case 0:
			client.Close()
		case 1:
			server.Close()
		default:
			go server.Close()
			client.Close()
		}
		if !waitDone(&done, wait) {
			t.Fatalf("round %d: operations still running %v after Close", round, wait)
		}
		// Both ends must end; with writes in flight a close may be abrupt,
		// so what Wait reports is not checked here.
		client.Close()
		server.Close()
		waitErr(t, "client Wait", client)
		waitErr(t, "server Wait", server)
		cancel()
	}
	t.Logf("%d rounds of %d goroutines", round, goroutines)
}

// waitDone waits for wg, for at most d.
func waitDone(wg *sync.WaitGroup, d time.Duration) bool {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}
