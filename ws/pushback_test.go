//go:build !js

package ws_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// goneBound is the liveness bound ws.Options documents for a Conn nobody
// reads with the default options (about 2 s after the other side closes),
// with room for a loaded machine.
const goneBound = wait

// unreadConn accepts one WebSocket connection with opts and hands its
// ws.Conn to the test, which decides whether anyone reads it, with the
// client's end: a coder/websocket client that reads all along, as a live
// remote side does (so it answers pings). Both are closed when the test
// ends.
func unreadConn(t *testing.T, opts ws.Options) (*ws.Conn, *websocket.Conn) {
	t.Helper()
	conns := make(chan *ws.Conn, 1)
	var handlers handlerWG
	release := make(chan struct{})
	srv := &ws.Server{Conn: opts}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		c, err := srv.Accept(w, r)
		if err != nil {
			return
		}
		defer c.Close()
		conns <- c
		<-release
	}))
	t.Cleanup(func() {
		close(release)
		handlers.wait(t)
		hs.Close()
	})
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	client, _, err := websocket.Dial(testCtx(t, wait), url, &websocket.DialOptions{HTTPClient: hs.Client()})
	if err != nil {
		t.Fatal(err)
	}
	var c *ws.Conn
	select {
	case c = <-conns:
	case <-time.After(wait):
		t.Fatal("no connection reached the server")
	}
	var reading sync.WaitGroup
	reading.Add(1)
	go func() {
		defer reading.Done()
		for {
			if _, _, err := client.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { client.CloseNow(); reading.Wait() })
	return c, client
}

// readWithin calls c.Read, failing the test if it does not return within d.
func readWithin(t *testing.T, c *ws.Conn, d time.Duration) ([]byte, error) {
	t.Helper()
	type result struct {
		msg []byte
		err error
	}
	ch := make(chan result, 1)
	go func() { msg, err := c.Read(); ch <- result{msg, err} }()
	select {
	case r := <-ch:
		return r.msg, r.err
	case <-time.After(d):
		c.Close() // ends the Read
		<-ch
		t.Fatalf("Read did not return within %v", d)
		return nil, nil
	}
}

// TestUnreadConnGoneWhenRemoteCloses (finding 3): a Conn that nobody reads
// (its Peer pushes back) learns, with the default options, that its remote
// side has gone within about 2 s: the keepalive probes by writing while
// nobody reads, and the write after the remote's close fails. Gone is
// closed, and Read fails at once with the cause (wrapping ErrKeepalive),
// without returning the message still unread.
func TestUnreadConnGoneWhenRemoteCloses(t *testing.T) {
	c, client := unreadConn(t, ws.Options{})
	writeRaw(t, client, `{"jsonrpc":"2.0","method":"unread"}`) // sits unread
	start := time.Now()
	client.CloseNow() // as its process dying would
	select {
	case <-c.Gone():
		t.Logf("the remote side's close was noticed after %v", time.Since(start))
	case <-time.After(goneBound):
		t.Fatalf("Gone not closed %v after the remote side closed", goneBound)
	}
	msg, err := readWithin(t, c, time.Second)
	if msg != nil || !errors.Is(err, ws.ErrKeepalive) {
		t.Errorf("Read after Gone = %q, %v; want no message and an error wrapping ErrKeepalive", msg, err)
	}
}

// TestUnreadConnKeptWhileRemoteReads (finding 3): a Conn that nobody reads
// for many ping intervals, whose remote side is alive and reading, is not
// dropped: the pongs sit unread behind its input, and a missing pong then
// proves nothing. Once it is read again, the connection works.
func TestUnreadConnKeptWhileRemoteReads(t *testing.T) {
	opts := ws.Options{PingInterval: 50 * time.Millisecond, PingTimeout: 250 * time.Millisecond}
	c, client := unreadConn(t, opts)
	writeRaw(t, client, `{"jsonrpc":"2.0","method":"first"}`)
	select {
	case <-c.Gone():
		t.Fatal("Gone closed while the remote side was alive and reading")
	case <-time.After(20 * opts.PingInterval): // many pings, none answered in time
	}
	writeRaw(t, client, `{"jsonrpc":"2.0","method":"second"}`)
	for _, want := range []string{"first", "second"} {
		msg, err := readWithin(t, c, wait)
		if err != nil || !strings.Contains(string(msg), want) {
			t.Fatalf("Read = %q, %v; want the %s message", msg, err, want)
		}
	}
	select {
	case <-c.Gone():
		t.Error("Gone closed on a live connection")
	default:
	}
}

// TestPushBackNoticesClientGone (finding 3, end to end): a ws.Server whose
// notification handler blocks until its ctx ends gets 4.4 MiB of
// notifications, more than the default MaxQueuedBytes (4 MiB), so its Peer
// pushes back: it stops reading. The client then closes its connection.
// The server must notice within the bound ws.Options states (about 2 s):
// its OnDisconnect runs and the handler's ctx is cancelled.
//
// This needs the Peer's side of jsonrpc.Watcher (its read loop waiting on
// Gone while it pushes back); without it, the Peer never reads again and
// this test fails.
func TestPushBackNoticesClientGone(t *testing.T) {
	entered := make(chan struct{}, 1)
	cancelled := make(chan struct{})
	mux := jsonrpc.NewMux()
	mux.HandleFunc("note", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-ctx.Done()
		select {
		case <-cancelled:
		default:
			close(cancelled) // notifications run one at a time
		}
		return nil, nil
	})
	disconnected := make(chan error, 1)
	ts := startServer(t, &ws.Server{
		Peer:         jsonrpc.Options{Handler: mux},
		OnDisconnect: func(_ *jsonrpc.Peer, cause error) { disconnected <- cause },
	}, nil)
	client := ts.dial(t, nil, nil)
	ts.nextPeer(t)

	param := []string{strings.Repeat("n", 64<<10)}
	ctx := testCtx(t, 6*wait) // 4.4 MiB under -race on a loaded machine took over 5 s
	for sent := 0; sent < 4<<20+400<<10; sent += len(param[0]) {
		if err := client.Notify(ctx, "note", param); err != nil {
			t.Fatalf("Notify after %d bytes: %v", sent, err)
		}
	}
	select {
	case <-entered:
	case <-time.After(wait):
		t.Fatal("the notification handler did not start")
	}
	client.Close() // the server does not read: no close handshake, the connection is dropped
	start := time.Now()

	select {
	case cause := <-disconnected:
		t.Logf("the server noticed %v after the client closed: %v", time.Since(start), cause)
	case <-time.After(goneBound):
		t.Fatalf("the server's OnDisconnect did not run within %v of the client closing", goneBound)
	}
	select {
	case <-cancelled:
	case <-time.After(wait):
		t.Fatal("the blocked handler's ctx was not cancelled")
	}
}
