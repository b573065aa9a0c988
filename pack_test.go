package jsonrpc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// packConn is a Conn with a message size limit (a Limiter) that counts
// the messages read from it that are arrays.
type packConn struct {
	Conn
	max    int
	arrays atomic.Int64
	reads  atomic.Int64
}

func (c *packConn) MaxMessageSize() int { return c.max }

func (c *packConn) Read() ([]byte, error) {
	msg, err := c.Conn.Read()
	if err == nil {
		c.reads.Add(1)
	}
	if err == nil && len(msg) > 0 && msg[0] == '[' {
		c.arrays.Add(1)
	}
	return msg, err
}

// packedFrames makes a Peer with opts (and a Conn limit of max bytes, if
// positive) a Group member, queues count notifications "n" with params
// [i] while nobody reads the other end (a Pipe's write waits for the
// read, so the first is being written and the rest wait in the member's
// queue), then reads every message the Peer wrote.
func packedFrames(t *testing.T, opts Options, max, count int) []string {
	t.Helper()
	c1, c2 := Pipe()
	var conn Conn = c1
	if max > 0 {
		conn = &packConn{Conn: c1, max: max}
	}
	p := NewPeer(conn, opts)
	cleanupPeer(t, p)
	var g Group
	g.Add(p)
	for i := range count {
		if err := g.Notify("n", [1]int{i}); err != nil {
			t.Fatal(err)
		}
	}
	var frames []string
	got := 0
	for got < count {
		msg, err := readWithin(c2, wait)
		if err != nil {
			t.Fatalf("after %d of %d notifications: %v", got, count, err)
		}
		frames = append(frames, string(msg))
		got += strings.Count(string(msg), `"method":"n"`)
	}
	c2.Close()
	return frames
}

// elements returns the params' numbers of the notifications in frames, in
// order, checking that each frame is a notification or an array of them.
func elements(t *testing.T, frames []string) []int {
	t.Helper()
	var out []int
	for _, f := range frames {
		v := decode(t, []byte(f))
		list, ok := v.([]any)
		if !ok {
			list = []any{v}
		}
		for _, e := range list {
			m, ok := e.(map[string]any)
			if !ok || m["method"] != "n" || m["jsonrpc"] != "2.0" || m["id"] != nil {
				t.Fatalf("frame %s holds %v, not a notification", f, e)
			}
			out = append(out, int(m["params"].([]any)[0].(float64)))
		}
	}
	return out
}

func wantSequence(t *testing.T, got []int, n int) {
	t.Helper()
	for i, v := range got {
		if v != i {
			t.Fatalf("notifications in the order %v, want 0..%d", got, n-1)
		}
	}
	if len(got) != n {
		t.Fatalf("%d notifications, want %d", len(got), n)
	}
}

// TestPackNotificationsOffByDefault: without PackNotifications every
// broadcast is a message of its own, however many are queued.
func TestPackNotificationsOffByDefault(t *testing.T) {
	for _, n := range []int{0, 1, -5} {
		frames := packedFrames(t, Options{PackNotifications: n}, 0, 20)
		if len(frames) != 20 {
			t.Fatalf("PackNotifications %d: %d messages for 20 notifications, want 20: %q", n, len(frames), frames)
		}
		wantSequence(t, elements(t, frames), 20)
	}
}

// TestPackNotificationsWritesQueuedAsOneBatch: with PackNotifications 4,
// what the member's queue holds when its writer comes to it goes as arrays
// of 4 (one waiting alone goes as itself), in order: while the first
// message waits for the Pipe's reader, the rest queue behind it and go as
// full arrays, but for the last.
func TestPackNotificationsWritesQueuedAsOneBatch(t *testing.T) {
	frames := packedFrames(t, Options{PackNotifications: 4}, 0, 40)
	for i, f := range frames {
		n := strings.Count(f, `"method"`)
		if n > 1 && f[0] != '[' || n == 1 && f[0] != '{' {
			t.Fatalf("message %d holds %d notifications: %s", i, n, f)
		}
		if n > 4 || n < 4 && i > 0 && i < len(frames)-1 {
			t.Fatalf("message %d of %d holds %d notifications, want 4 but for the first and the last: %q", i, len(frames), n, frames)
		}
	}
	if len(frames) > 11 {
		t.Fatalf("%d messages for 40 notifications in arrays of 4", len(frames))
	}
	wantSequence(t, elements(t, frames), 40)
}

// TestPackNotificationsBounded: a packed message holds no more elements
// than MaxBatch (which bounds outgoing batches) and no more bytes than the
// Conn's limit; a queue of one message that fits alone is not an array.
func TestPackNotificationsBounded(t *testing.T) {
	frames := packedFrames(t, Options{PackNotifications: 100, MaxBatch: 3}, 0, 31)
	for _, f := range frames {
		if strings.Count(f, `"method"`) > 3 {
			t.Fatalf("a message of %d elements with MaxBatch 3: %s", strings.Count(f, `"method"`), f)
		}
	}
	wantSequence(t, elements(t, frames), 31)

	one := len(`{"jsonrpc":"2.0","method":"n","params":[10]}`)
	limit := 2*one + 3 // two two-digit elements, a comma and the brackets
	frames = packedFrames(t, Options{PackNotifications: 100}, limit, 31)
	arrays := 0
	for _, f := range frames {
		if len(f) > limit {
			t.Fatalf("a message of %d bytes over the Conn's limit of %d: %s", len(f), limit, f)
		}
		if f[0] == '[' {
			arrays++
		}
	}
	if arrays == 0 {
		t.Fatalf("no array within the limit: %q", frames)
	}
	wantSequence(t, elements(t, frames), 31)
}

// TestPackedNotificationsArriveInOrder: a Go Peer that receives packed
// broadcasts handles every notification once, in the order they were
// broadcast (a batch's notifications run in turn, in the notifications
// lane, as those sent alone do), and sends nothing back for them.
func TestPackedNotificationsArriveInOrder(t *testing.T) {
	const count = 2000
	var (
		mu  sync.Mutex
		got []int
	)
	h := mux(t, map[string]HandlerFunc{"n": func(_ context.Context, req *Request) (any, error) {
		var p [1]int
		if err := unmarshalJSON(req.Params, &p); err != nil {
			return nil, err
		}
		mu.Lock()
		got = append(got, p[0])
		mu.Unlock()
		return nil, nil
	}})
	c1, c2 := Pipe()
	client, serverEnd := &packConn{Conn: c2, max: 1 << 20}, &packConn{Conn: c1, max: 1 << 20}
	server := NewPeer(serverEnd, Options{PackNotifications: 64})
	cleanupPeer(t, server)
	cp := NewPeer(client, Options{Handler: h})
	cleanupPeer(t, cp)
	var g Group
	g.MaxQueue = count
	g.Add(server)
	for i := range count {
		if err := g.Notify("n", [1]int{i}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, fmt.Sprint(count, " notifications handled"), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == count
	})
	mu.Lock()
	wantSequence(t, got, count)
	mu.Unlock()
	if client.arrays.Load() == 0 {
		t.Fatal("no packed message arrived: the test did not test packing")
	}
	// Nothing came back for the batches: a call made after they were
	// handled is the first message the server reads.
	if err := cp.Call(testCtx(t, wait), "x", nil, nil); err == nil || errorCode(t, err) != CodeMethodNotFound {
		t.Fatalf("a call after the batches: %v, want Method not found from the server", err)
	}
	if n := serverEnd.reads.Load(); n != 1 {
		t.Fatalf("the server read %d messages, want 1 (the call): the batches of notifications were answered", n)
	}
}

// TestPackDoesNotTakeLargePooledBuffer: a packed message is written into a
// buffer near its size, never into a large pooled one (up to 1 MiB, from an
// earlier large message), which a lagging member would hold, and its
// budget be charged, at its capacity for a 16 KiB pack.
func TestPackDoesNotTakeLargePooledBuffer(t *testing.T) {
	o := &outbox{packMax: 16, packBytes: maxPackBytes}
	for range 4 {
		o.msgs = append(o.msgs, []byte(`{"jsonrpc":"2.0","method":"n"}`))
	}
	msgBufs.Put(&msgBuf{b: make([]byte, 0, maxPooledMsg)})
	mb := o.pack()
	if mb == nil {
		t.Fatal("four small messages were not packed")
	}
	if cap(mb.b) > 2*maxPackBytes {
		t.Fatalf("a pack of %d bytes took a buffer of %d", len(mb.b), cap(mb.b))
	}
}
