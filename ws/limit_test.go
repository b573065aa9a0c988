//go:build !js

package ws_test

import (
	"encoding/binary"
	"errors"
	"fmt"
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
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}, Options: ws.Options{MaxMessageSize: 1024}}, nil)
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
// run in this process; the chunk is allocated beforehand): about 2.2 MiB
// per refusal, whatever the message size, all of it io.ReadAll growing its
// buffer to the 1 MiB cap; about 4.3 MiB under -race, whose builds allocate
// ReadAll's chunks twice. Buffering the 16 MiB message whole would cost at
// least 16 MiB. So the bound is 6 MiB for each, and the 16 MiB refusal must
// cost no more than the 2 MiB one plus 1 MiB.
func TestOversizedMessageMemory(t *testing.T) {
	const limit = 1 << 20
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}, Options: ws.Options{MaxMessageSize: limit}}, nil)
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
		if cost[i] > 6<<20 {
			t.Errorf("refusing %d MiB allocated %d bytes, want < 6 MiB", size>>20, cost[i])
		}
	}
	if cost[1] > cost[0]+1<<20 {
		t.Errorf("refusing 16 MiB cost %d bytes, 2 MiB cost %d: the cost grows with the message", cost[1], cost[0])
	}
}

// TestHugeFrameHeader: a frame header that announces 2 GiB (with only a
// few bytes of payload behind it) is refused with close status 1009,
// without allocating anything near what it claims: the read limit is
// checked against the length as the payload is read, never trusted for
// an allocation.
func TestHugeFrameHeader(t *testing.T) {
	ts := startServer(t, &ws.Server{Options: ws.Options{MaxMessageSize: 1 << 20}}, nil)
	c := dialRawWS(t, ts)
	server := ts.nextPeer(t)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := c.Write(append(textFrameHeader(2<<30), `{"jsonrpc":"2.0",`...)); err != nil {
		t.Fatal(err)
	}
	// The server closes with 1009 once it has read past the limit: send
	// filler up to just past it, then read the close frame.
	filler := make([]byte, 64<<10)
	for sent := 0; sent <= 1<<20; sent += len(filler) {
		if _, err := c.Write(filler); err != nil {
			break // the server has closed already
		}
	}
	frame := c.recv(t) // the close frame
	if len(frame) < 2 || binary.BigEndian.Uint16(frame) != uint16(websocket.StatusMessageTooBig) {
		t.Errorf("close frame payload %q, want status 1009", frame)
	}
	// No close handshake can complete (the server would read the reply as
	// more of the 2 GiB payload), so the server drops the connection.
	ended := make(chan error, 1)
	go func() { ended <- server.Wait() }()
	select {
	case err := <-ended:
		if !errors.Is(err, websocket.ErrMessageTooBig) {
			t.Errorf("server Wait = %v, want an error wrapping websocket.ErrMessageTooBig", err)
		}
	case <-time.After(3 * wait):
		t.Fatalf("server Wait did not return within %v", 3*wait)
	}
	runtime.ReadMemStats(&after)
	if cost := after.TotalAlloc - before.TotalAlloc; cost > 16<<20 {
		t.Errorf("refusing a 2 GiB frame allocated %d bytes", cost)
	} else {
		t.Logf("refusing a frame announcing 2 GiB allocated %.2f MiB", float64(cost)/(1<<20))
	}
}
