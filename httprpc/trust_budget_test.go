package httprpc

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// TestSessionBurstPushesBack pins finding 12: a handler that sends 4 MiB
// of notifications (512 of 8 KiB) to a client that reads its stream at
// loopback speed ended 4 or 5 of 5 sessions with ErrSlowClient (the
// session's 1 MiB buffer filled faster than the client took it), and the
// reply was lost. Now the handler's sends wait for the client, as over a
// WebSocket: 5 sessions at once, every notification and reply arrive.
func TestSessionBurstPushesBack(t *testing.T) {
	const notes, size = 512, 8 << 10
	m := testMux()
	m.HandleFunc("burst", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		p := jsonrpc.PeerFromContext(ctx)
		chunk := []string{strings.Repeat("x", size)}
		for range notes {
			if err := p.Notify(ctx, "chunk", chunk); err != nil {
				return nil, err
			}
		}
		return "done", nil
	})
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: m}})
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		var mu sync.Mutex
		got := 0
		client := jsonrpc.NewMux()
		client.HandleFunc("chunk", func(context.Context, *jsonrpc.Request) (any, error) {
			mu.Lock()
			got++
			mu.Unlock()
			return nil, nil
		})
		c := ts.dial(t, client, DialOptions{})
		wg.Go(func() {
			ctx := testCtx(t, 2*time.Minute) // 20 MiB in all: slow under -race on a loaded machine, which is no failure
			if err := c.Call(ctx, "echo", nil, nil); err != nil {
				errs <- err
				return
			}
			var res string
			if err := c.Call(ctx, "burst", nil, &res); err != nil || res != "done" {
				errs <- fmt.Errorf("burst: %q %w", res, err)
				return
			}
			for end := time.Now().Add(wait); ; time.Sleep(time.Millisecond) { // their handlers may still run
				mu.Lock()
				k := got
				mu.Unlock()
				if k == notes {
					return
				}
				if time.Now().After(end) {
					errs <- fmt.Errorf("%d of %d notifications", k, notes)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case cause := <-ts.ends:
		t.Fatalf("a session ended: %v", cause)
	default:
	}
}

// TestSessionAbandonedJSONReply pins finding 13: when a JSON-only POST's
// client goes away, its reply stayed buffered as not taken, for ever (a
// JSON reply cannot be resumed): after 8 abandoned replies of 128 KiB the
// session ended with ErrSlowClient and the next call got 404. Now such a
// reply is dropped: 20 abandoned, and the session goes on.
func TestSessionAbandonedJSONReply(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	m := testMux()
	m.HandleFunc("big", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		started <- struct{}{}
		<-release
		return strings.Repeat("y", 128<<10), nil
	})
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: m}}
	defer srv.Shutdown(context.Background())
	sid := serveRecorded(srv, "POST", initialize, ctJSON, acceptJSON).Header().Get(SessionIDHeader)
	sidH := "Mcp-Session-Id: " + sid
	for i := range 20 {
		ctx, leave := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			serveRecordedReq(srv, serveRequest(ctx, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"big"}`, i)), ctJSON, acceptJSON, sidH))
			close(done)
		}()
		within(t, started, "the handler")
		leave()
		<-done
		release <- struct{}{}
	}
	w := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":"next","method":"echo","params":[1]}`, ctJSON, acceptJSON, sidH)
	if w.Code != 200 {
		t.Fatalf("a call after 20 abandoned replies of 128 KiB: %d %q", w.Code, w.Body)
	}
}

// TestSessionBoundsBodies pins finding 14: a SessionServer read any number
// of bodies at once (768 stalled uploads of 1 MiB held 783 MiB in
// mcptool). Now MaxBodies (256) bounds them: of 300 uploads stalled
// halfway, 44 get 503 at once; the heap they hold is logged.
func TestSessionBoundsBodies(t *testing.T) {
	const n, size = 300, 64 << 10
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, MaxBodySize: size})
	before := heap()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	half := strings.Repeat("x", size/2)
	for range n {
		c, err := net.DialTimeout("tcp", ts.hs.Listener.Addr().String(), wait)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", size, half)
	}
	refused := make(chan bool, n)
	for _, c := range conns {
		go func() {
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 12)
			k, _ := c.Read(buf)
			refused <- strings.Contains(string(buf[:k]), " 503")
		}()
	}
	count := 0
	for range n {
		if <-refused {
			count++
		}
	}
	t.Logf("%d of %d stalled uploads of %d KiB refused at once; heap %+d KiB while the rest wait", count, n, size>>10, (int64(heap())-int64(before))>>10)
	if count != n-256 {
		t.Fatalf("%d uploads refused, want %d (past MaxBodies, 256)", count, n-256)
	}
}
