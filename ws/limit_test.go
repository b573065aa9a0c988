//go:build !js

package ws_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// echoOfSize returns an echo call of exactly n bytes.
func echoOfSize(t testing.TB, id, n int) string {
	t.Helper()
	head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":["`, id)
	tail := `"]}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		t.Fatalf("cannot build an echo call of %d bytes", n)
	}
	return head + strings.Repeat("x", pad) + tail
}

// TestMaxMessageSize: with a 1024-byte cap, a 1024-byte message is served
// and a 1025-byte one closes the connection with status 1009.
func TestMaxMessageSize(t *testing.T) {
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}, Conn: ws.Options{MaxMessageSize: 1024}}, nil)
	c := ts.rawDial(t, nil)
	server := ts.nextPeer(t)

	for i, n := range []int{1000, 1024} {
		msg := echoOfSize(t, i, n)
		writeRaw(t, c, msg)
		_, got, err := readRaw(t, c)
		if err != nil {
			t.Fatalf("echo of %d bytes: %v", n, err)
		}
		want := strings.Replace(msg, `"method":"echo","params":`, `"result":`, 1)
		if !jsonEqual(t, got, []byte(want)) {
			t.Errorf("echo of %d bytes: reply %.80s…", n, got)
		}
	}

	writeRaw(t, c, echoOfSize(t, 9, 1025))
	_, got, err := readRaw(t, c)
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("read after 1025 bytes: %.80q, %v; want close status 1009", got, err)
	}
	err = waitErr(t, "server Wait", server)
	if err == nil || !errors.Is(err, websocket.ErrMessageTooBig) {
		t.Errorf("server Wait = %v, want an error wrapping websocket.ErrMessageTooBig", err)
	}
}

// TestOversizedMessageMemory streams messages of 2 MiB and 16 MiB, in 32 KiB
// frames, to a server capped at 1 MiB. coder/websocket reads a message
// incrementally through a limit reader, so the server refuses it after
// 1 MiB + 1 byte (status 1009) and never holds the rest: what arrives later
// is discarded while the close handshake completes. The client reads
// concurrently, as a real one would, so it stops writing once it sees the
// close frame.
//
// Measured with runtime.MemStats.TotalAlloc over each exchange (both ends
// run in this process; the chunk is allocated beforehand): about 2.05 MiB
// per refusal, whatever the message size, with or without -race, nearly
// all of it readMessage doubling its buffer up to the 1 MiB cap.
// Buffering the 16 MiB message whole would cost at least 16 MiB. So the
// bound is 3 MiB for each, and the 16 MiB refusal must cost no more than
// the 2 MiB one plus 1 MiB.
func TestOversizedMessageMemory(t *testing.T) {
	const limit = 1 << 20
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}, Conn: ws.Options{MaxMessageSize: limit}}, nil)
	chunk := []byte(strings.Repeat("y", 32<<10))
	var cost [2]uint64
	for i, size := range []int{2 << 20, 16 << 20} {
		c := ts.rawDial(t, nil)
		server := ts.nextPeer(t)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)

		read := make(chan error, 1)
		go func() { _, _, err := readRaw(t, c); read <- err }()
		w, err := c.Writer(testCtx(t, wait), websocket.MessageText)
		if err != nil {
			t.Fatal(err)
		}
		var rerr error
		gotRead := false
	write:
		for sent := 0; sent < size; sent += len(chunk) {
			select {
			case rerr = <-read:
				gotRead = true
				break write
			default:
			}
			if _, err := w.Write(chunk); err != nil {
				break // the client's side is closed: the reader says why
			}
		}
		if !gotRead {
			rerr = <-read // bounded by readRaw
		}
		if websocket.CloseStatus(rerr) != websocket.StatusMessageTooBig {
			t.Errorf("%d MiB: client read %v; want close status 1009", size>>20, rerr)
		}
		if err := waitErr(t, "server Wait", server); !errors.Is(err, websocket.ErrMessageTooBig) {
			t.Errorf("%d MiB: server Wait = %v, want an error wrapping websocket.ErrMessageTooBig", size>>20, err)
		}
		runtime.ReadMemStats(&after)
		cost[i] = after.TotalAlloc - before.TotalAlloc
		t.Logf("refusing %d MiB over a 1 MiB cap allocated %.2f MiB", size>>20, float64(cost[i])/(1<<20))
		if cost[i] > 3<<20 {
			t.Errorf("refusing %d MiB allocated %d bytes, want < 3 MiB", size>>20, cost[i])
		}
	}
	if cost[1] > cost[0]+1<<20 {
		t.Errorf("refusing 16 MiB cost %d bytes, 2 MiB cost %d: the cost grows with the message", cost[1], cost[0])
	}
}

// TestHugeFrameHeader (finding 11): a frame header that announces 2 GiB,
// with junk streaming behind it, is refused with close status 1009 every
// time, and the client gets that close frame: the server closes a socket
// only once it has read what still arrives (for a bounded time), since
// closing one with input unread resets the connection, and the close frame
// with it. No close handshake can complete (the server would read the
// reply as more of the 2 GiB payload), so the server then drops the
// connection. Reading stops at the limit: the refusal allocates about the
// limit, never anything near what the header claims.
func TestHugeFrameHeader(t *testing.T) {
	const (
		limit = 1 << 20
		junk  = limit + 4<<20 // beyond the limit, and more than the socket buffers hold
	)
	ts := startServer(t, &ws.Server{Conn: ws.Options{MaxMessageSize: limit}}, nil)
	chunk := make([]byte, 64<<10)
	for try := range 5 {
		c := dialRawWS(t, ts)
		// A try takes 0.1 to 1.2 s under -race on a loaded machine; its
		// bound, for the whole exchange, is for a hang, not for speed
		// (dialRawWS's 5 s deadline from the dial was too near).
		c.SetDeadline(time.Now().Add(hugeTry))
		server := ts.nextPeer(t)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)

		type frame struct {
			op      byte
			payload []byte
			err     error
		}
		got := make(chan frame, 1)
		go func() { // as a real client reads while it writes
			op, p, err := c.readFrame()
			got <- frame{op, p, err}
		}()
		if _, err := c.Write(append(textFrameHeader(2<<30), `{"jsonrpc":"2.0",`...)); err != nil {
			t.Fatal(err)
		}
		for sent := 0; sent < junk; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				break // the server has closed
			}
		}
		var f frame
		select {
		case f = <-got:
		case <-time.After(hugeTry):
			t.Fatalf("try %d: no frame from the server within %v", try, hugeTry)
		}
		if f.err != nil || f.op != 0x8 || len(f.payload) < 2 || binary.BigEndian.Uint16(f.payload) != uint16(websocket.StatusMessageTooBig) {
			t.Errorf("try %d: got opcode %#x, payload %q, %v; want a close frame with status 1009", try, f.op, f.payload, f.err)
		}
		c.Close() // as a client that has its answer does
		if err := waitErr(t, "server Wait", server); !errors.Is(err, websocket.ErrMessageTooBig) {
			t.Errorf("try %d: server Wait = %v, want an error wrapping websocket.ErrMessageTooBig", try, err)
		}
		runtime.ReadMemStats(&after)
		cost := after.TotalAlloc - before.TotalAlloc
		t.Logf("try %d: refusing a frame announcing 2 GiB over a 1 MiB limit allocated %.2f MiB", try, float64(cost)/(1<<20))
		if cost > 3*limit {
			t.Errorf("try %d: refusing a 2 GiB frame over a 1 MiB limit allocated %d bytes, want under 3 MiB", try, cost)
		}
	}
}

// hugeTry bounds each of TestHugeFrameHeader's exchanges of 5 MiB.
const hugeTry = 30 * time.Second

// TestRefusalCloseFrameNotLost (finding 11): the close frame refusing a
// message over the limit reaches a client that reads late. The client
// shrinks its receive buffer and does not read while the server sends it a
// notification of 64 KiB, more than that buffer takes, so that the rest is
// still queued in the server's socket when the refusal's close frame joins
// it; then the client sends a frame header announcing 2 GiB and junk, and
// reads only after that. Closing a socket with input unread resets the
// connection and drops what it has not sent, the close frame with it: the
// server must read what arrives before it closes (it lingers).
func TestRefusalCloseFrameNotLost(t *testing.T) {
	const limit = 64 << 10
	pushed := make(chan struct{}, 1)
	mux := jsonrpc.NewMux()
	mux.HandleFunc("push", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		err := jsonrpc.PeerFromContext(ctx).Notify(ctx, "data", []string{strings.Repeat("d", 64<<10)})
		pushed <- struct{}{} // written, as far as the server's socket goes
		return nil, err
	})
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: mux}, Conn: ws.Options{MaxMessageSize: limit}}, nil)
	for try := range 3 {
		c := dialRawWS(t, ts)
		server := ts.nextPeer(t)
		if err := c.Conn.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
			t.Fatal(err)
		}
		c.send(t, `{"jsonrpc":"2.0","id":1,"method":"push"}`)
		select {
		case <-pushed:
		case <-time.After(wait):
			t.Fatal("the server did not push its notification")
		}
		if _, err := c.Write(append(textFrameHeader(2<<30), `{"jsonrpc":"2.0",`...)); err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 16<<10)
		for sent := 0; sent < 2*limit; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				break // the server has closed
			}
		}
		var status uint16
		for range 4 { // the notification, the reply, then the close frame
			op, p, err := c.readFrame()
			if err != nil {
				t.Errorf("try %d: %v before any close frame", try, err)
				break
			}
			if op == 0x8 && len(p) >= 2 {
				status = binary.BigEndian.Uint16(p)
				break
			}
		}
		if status != uint16(websocket.StatusMessageTooBig) {
			t.Errorf("try %d: close status %d, want 1009", try, status)
		}
		c.Close()
		if err := waitErr(t, "server Wait", server); !errors.Is(err, websocket.ErrMessageTooBig) {
			t.Errorf("try %d: server Wait = %v, want an error wrapping websocket.ErrMessageTooBig", try, err)
		}
	}
}

// TestConnMaxMessageSize: a ws.Conn tells its Peer (jsonrpc.Limiter) the
// read limit it was configured with, the default when none was set, and 0
// (no cap) for a negative one, the one convention for limits.
func TestConnMaxMessageSize(t *testing.T) {
	for _, tc := range []struct {
		set  int64
		want int
	}{{0, ws.DefaultMaxMessageSize}, {1234, 1234}, {-1, 0}} {
		c, _ := unreadConn(t, ws.Options{MaxMessageSize: tc.set})
		var l jsonrpc.Limiter = c
		if got := l.MaxMessageSize(); got != tc.want {
			t.Errorf("MaxMessageSize with Options.MaxMessageSize %d = %d, want %d", tc.set, got, tc.want)
		}
	}
}
