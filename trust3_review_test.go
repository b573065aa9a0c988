package jsonrpc

// The findings of an independent review of issue 28's fixes (at cfc0508),
// each pinned by a test that failed there; three of them (the waiting
// replies that ended a connection, the id-null error that came before its
// call's seq was recorded, the drain after a clean Gone that never ended)
// were introduced by those fixes, the others were older. Figures are in
// each test's log.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAllNotificationBatchChargedWhatItKeeps: a batch whose only
// requests are notifications (the other elements, if any, are responses,
// cancels or progress, which the read loop takes itself) is not split, so
// nothing is detached, yet it is charged only its elements' sizes
// (elemSize: method, params, id and 64) instead of the capacity of the
// message its params are slices of. Whitespace between elements (or a
// stray response, or an unknown member) is the padding.
func TestAllNotificationBatchChargedWhatItKeeps(t *testing.T) {
	space := strings.Repeat(" ", 256<<10)
	stray := strings.Repeat("s", 256<<10)
	t.Run("whitespace", func(t *testing.T) {
		testAllNotificationBatch(t, func(i int) string {
			return fmt.Sprintf(`[{"jsonrpc":"2.0","method":"n","params":[%d]}%s]`, i, space)
		})
	})
	t.Run("stray response beside it", func(t *testing.T) {
		testAllNotificationBatch(t, func(i int) string {
			return fmt.Sprintf(`[{"jsonrpc":"2.0","method":"n","params":[%d]},{"jsonrpc":"2.0","id":"x%d","result":%q}]`, i, i, stray)
		})
	})
}

func testAllNotificationBatch(t *testing.T, msg func(i int) string) {
	const (
		batches = 100
		budget  = 1 << 20
	)
	release := make(chan struct{})
	var first atomic.Bool
	var handled atomic.Int64
	h := mux(t, map[string]HandlerFunc{"n": func(ctx context.Context, req *Request) (any, error) {
		if first.CompareAndSwap(false, true) {
			select { // the notifications lane is busy: the others wait
			case <-release:
			case <-ctx.Done():
			}
		}
		handled.Add(1)
		return nil, nil
	}})
	before := heapInUse()
	c1, c2 := Pipe()
	p := NewPeer(c1, Options{Handler: h, MaxQueuedBytes: budget})
	cleanupPeer(t, p)
	defer c2.Close()
	var once sync.Once
	defer once.Do(func() { close(release) })
	// The batches go until the server pushes back, which it must before
	// it holds them all; the heap is read a second in, pushed back or not.
	sent := make(chan int, 1)
	go func() {
		for i := range batches {
			if c2.Write([]byte(msg(i))) != nil {
				sent <- i
				return
			}
		}
		sent <- batches
	}()
	var n int
	select {
	case n = <-sent:
	case <-time.After(time.Second):
		n = -1 // pushed back, or still sending
	}
	in, _, _ := RetainedBytes(p)
	held := heapInUse() - before
	t.Logf("all-notification batches of %d KiB, handler busy: %d of %d taken before the push-back (-1: pushed back), live heap +%s, inbound counter %d bytes (budget %s)",
		len(msg(0))>>10, n, batches, mib(held), in, mib(budget))
	// The budget twice over (the most notifications may take), one
	// message being read, and slack.
	if limit := int64(2*budget + 4<<20); held > limit {
		t.Errorf("the Peer holds %s for queued notifications charged %d bytes, over %s", mib(held), in, mib(limit))
	}
	once.Do(func() { close(release) })
	if n == -1 {
		n = <-sent
	}
	eventually(t, "every notification handled once the handler is free", func() bool { return handled.Load() == int64(n) })
}

// heapAfterPools returns the live heap after two collections: the first
// moves what sync.Pools hold to their victim caches, the second frees
// them, so that what is left is what something references.
func heapAfterPools() int64 {
	runtime.GC()
	return heapInUse()
}

// TestQueuedMessageChargedWhatItKeeps: a message queued for writing
// is charged len(data) against MaxOutboundBytes, but its pooled msgBuf
// keeps cap(data) alive, and the pool hands buffers of up to 1 MiB
// (maxPooledMsg) to messages of a few bytes. A remote side that first asks
// for large replies (a burst of calls, all read), then stops reading and
// sends small calls, makes the Peer hold the large buffers the pool had,
// behind replies of ~40 bytes each. The collector is off between the two
// phases, as on a server whose heap is large enough that no collection
// runs between them (a pool is emptied by two collections).
func TestQueuedMessageChargedWhatItKeeps(t *testing.T) {
	const (
		big      = 48
		small    = 200
		budget   = 256 << 10
		bigReply = 700 << 10
	)
	res := json.RawMessage(`"` + strings.Repeat("r", bigReply) + `"`)
	// The big calls' handlers take a moment (I/O, say), so their replies
	// are made together: they return once all of them have started.
	var started atomic.Int64
	all := make(chan struct{})
	h := mux(t, map[string]HandlerFunc{
		"big": func(ctx context.Context, _ *Request) (any, error) {
			if started.Add(1) == big {
				close(all)
			}
			select {
			case <-all:
			case <-ctx.Done():
			}
			return res, nil
		},
		"tiny": func(context.Context, *Request) (any, error) { return 1, nil },
	})
	c1, c2 := Pipe()
	p := NewPeer(c1, Options{Handler: h, MaxOutboundBytes: budget, MaxQueuedBytes: budget})
	cleanupPeer(t, p)
	defer c2.Close()
	before := heapAfterPools()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	// Phase 1: a burst of calls for big replies, all read.
	read := make(chan int, 1)
	go func() {
		n := 0
		defer func() { read <- n }()
		for n < big {
			if _, err := readWithin(c2, wait); err != nil {
				return
			}
			n++
		}
	}()
	for i := range big {
		if err := writeWithin(c2, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"big"}`, i), wait); err != nil {
			t.Fatal(err)
		}
	}
	if n := <-read; n != big {
		t.Fatalf("read %d replies of %d", n, big)
	}
	// Phase 2: stop reading, send small calls. Their replies queue.
	for i := range small {
		if err := writeWithin(c2, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"t%d","method":"tiny"}`, i), wait); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the small replies queued", func() bool {
		p.out.mu.Lock()
		defer p.out.mu.Unlock()
		return len(p.out.q) >= small-1
	})
	_, out, _ := RetainedBytes(p)
	capSum, large := 0, 0
	p.out.mu.Lock()
	for _, m := range p.out.q {
		if m.buf != nil {
			capSum += cap(m.buf.b)
			if cap(m.buf.b) > 64<<10 {
				large++
			}
		}
	}
	p.out.mu.Unlock()
	debug.SetGCPercent(100)
	held := heapAfterPools() - before
	t.Logf("%d replies of a few bytes queued behind a remote that stopped reading: outbound counter %d bytes (budget %s); "+
		"their buffers' capacity %s, %d of them over 64 KiB; live heap +%s",
		len(p.out.q), out, mib(budget), mib(int64(capSum)), large, mib(held))
	// Both budgets, one big message, and slack.
	if limit := int64(2*budget + bigReply + 4<<20); held > limit {
		t.Errorf("the Peer holds %s for replies charged %d bytes, over %s", mib(held), out, mib(limit))
	}
}

// lateWriteConn is a Conn whose Write returns only once hold is closed,
// after the message has gone: a writer descheduled right after its
// write syscall, while the remote side reads and answers.
type lateWriteConn struct {
	Conn
	hold chan struct{}
}

func (c *lateWriteConn) Write(msg []byte) error {
	err := c.Conn.Write(msg)
	select {
	case <-c.hold:
	case <-time.After(wait):
	}
	return err
}

// TestNullIDErrorBeforeWriteReturnsFailsLoneCall: a call records the seq of its
// message (pendingTable.sent) only after its write returns, and an id-null
// error that the read loop routes before that finds seq 0 and is dropped,
// though the call is alone and the error can only be its. With a ctx that
// never ends (which is what writes in place, on the caller's goroutine) the
// call then waits for ever. Before 425e108 it failed at once with the error.
func TestNullIDErrorBeforeWriteReturnsFailsLoneCall(t *testing.T) {
	c1, c2 := Pipe()
	hold := make(chan struct{})
	client := NewPeer(&lateWriteConn{Conn: c1, hold: hold})
	cleanupPeer(t, client)
	r := startRaw(t, c2)
	done := make(chan error, 1)
	go func() { done <- client.Call(context.Background(), "a", nil, nil) }()
	r.recv()
	r.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":"message too large"}}`)
	r.sync() // routed
	close(hold)
	const bound = 2 * time.Second
	start := time.Now()
	select {
	case err := <-done:
		if errorCode(t, err) != CodeInvalidRequest {
			t.Fatalf("call = %v, want the -32600 error", err)
		}
	case <-time.After(bound):
		client.Close()
		err := <-done
		t.Errorf("the lone call got no outcome within %v of its id-null error (and would wait for ever: its ctx never ends); "+
			"after Close: %v", time.Since(start).Round(time.Millisecond), err)
	}
}

// TestReplyBeforeWriteReturnsCountsAsAnswered: the same race on a reply:
// a call answered before its seq is recorded does not advance synced, so
// the next lone call's id-null error is dropped too (the message before it
// was answered, but the table does not know), and that call waits until
// its ctx ends.
func TestReplyBeforeWriteReturnsCountsAsAnswered(t *testing.T) {
	c1, c2 := Pipe()
	lc := &lateWriteConn{Conn: c1, hold: make(chan struct{})}
	client := NewPeer(lc)
	cleanupPeer(t, client)
	r := startRaw(t, c2)
	// Call 1: answered before its write returns.
	done := make(chan error, 1)
	go func() { done <- client.Call(context.Background(), "a", nil, nil) }()
	req := r.recv()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":1}`, rawMember(t, req, "id")))
	r.sync()
	close(lc.hold)
	if err := within(t, done, "call 1"); err != nil {
		t.Fatal(err)
	}
	// Call 2, written as usual: the remote cannot read it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	go func() { done <- client.Call(ctx, "b", nil, nil) }()
	r.recv()
	r.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":"message too large"}}`)
	err := within(t, done, "call 2")
	if !errors.Is(err, context.DeadlineExceeded) {
		if errorCode(t, err) == CodeInvalidRequest {
			return
		}
	}
	t.Errorf("call 2, alone and right after an answered one, got %v after %v instead of the id-null error at once",
		err, time.Since(start).Round(time.Millisecond))
}

// TestNullIDErrorLoneCallNeverHangs: the race of
// TestNullIDErrorBeforeWriteReturnsFailsLoneCall without any help: a fresh
// client over a Pipe makes one Call; the remote side answers every message
// at once with an id-null error (as a remote whose limit is smaller
// answers a message too large). The call is alone, the first message ever
// sent: the error is its. Each try waits 5 s for the outcome (300 ms
// was passed by a load average of 17), and three hangs end the test.
func TestNullIDErrorLoneCallNeverHangs(t *testing.T) {
	for _, mode := range []string{"ctx that never ends (written in place)", "ctx with a deadline (queued)"} {
		t.Run(mode, func(t *testing.T) {
			const tries = 100
			hung := 0
			for range tries {
				c1, c2 := Pipe()
				client := NewPeer(c1)
				answered := make(chan struct{})
				go func() {
					defer close(answered)
					for {
						if _, err := c2.Read(); err != nil {
							return
						}
						if c2.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}`)) != nil {
							return
						}
					}
				}()
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if mode != "ctx that never ends (written in place)" {
					ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
				}
				done := make(chan error, 1)
				go func() { done <- client.Call(ctx, "a", nil, nil) }()
				select {
				case <-done:
				case <-time.After(5 * time.Second): // an outcome comes at once, or never
					hung++
				}
				cancel()
				client.Close()
				client.Wait()
				c2.Close()
				<-answered
				if hung >= 3 {
					break // enough to show it, in bounded time
				}
			}
			if hung > 0 {
				t.Errorf("%d of %d lone calls got no outcome within 5 s of the id-null error that answered them", hung, tries)
			}
		})
	}
}

// cleanGoneConn is a Conn whose Watcher can say that the remote side ended
// cleanly (as stdio.Command's does when the child exits with status 0)
// while the stream itself stays open (as when a process the child started
// still holds its standard output).
type cleanGoneConn struct {
	Conn
	gone chan struct{}
}

var errReviewExited = fmt.Errorf("test: child exited with status 0: %w", io.EOF)

func (c *cleanGoneConn) Gone() <-chan struct{} { return c.gone }
func (c *cleanGoneConn) GoneErr() error {
	select {
	case <-c.gone:
		return errReviewExited
	default:
		return nil
	}
}

// TestCleanGoneDrainEndsWithinDrainTimeout: after a clean Gone seen while
// pushing back, the Peer fails its pending calls and starts DrainTimeout,
// but only the push-back loop looks at the deadline: once the handler
// makes room, the read loop reads on, and if the stream does not end the
// Peer never does. It keeps serving new calls long past DrainTimeout, its
// Done stays open, and its own Calls fail with ErrClosed meanwhile.
func TestCleanGoneDrainEndsWithinDrainTimeout(t *testing.T) {
	const drain = 200 * time.Millisecond
	release := make(chan struct{})
	var first atomic.Bool
	h := mux(t, map[string]HandlerFunc{
		"n": func(ctx context.Context, _ *Request) (any, error) {
			if first.CompareAndSwap(false, true) {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil, nil
		},
		"c": func(context.Context, *Request) (any, error) { return "served", nil },
	})
	c1, c2 := Pipe()
	wc := &cleanGoneConn{Conn: c1, gone: make(chan struct{})}
	server := NewPeer(wc, Options{Handler: h, MaxQueuedBytes: 2048, DrainTimeout: drain})
	cleanupPeer(t, server)
	defer c2.Close()
	// The remote sends notifications until the server pushes back.
	pad := strings.Repeat("x", 900)
	blocked := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			w := make(chan error, 1)
			go func() { w <- c2.Write(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"n","params":[%d,%q]}`, i, pad)) }()
			select {
			case err := <-w:
				if err != nil {
					close(blocked)
					return
				}
				continue
			case <-time.After(100 * time.Millisecond):
			}
			close(blocked) // pushed back
			<-w
			return
		}
	}()
	within(t, blocked, "push-back")
	close(wc.gone) // the child exits with status 0; its stdout stays open
	time.Sleep(drain / 4)
	close(release) // the handler makes room well within DrainTimeout
	// The remote's unread output is read; the stream stays open.
	lateReply := make(chan struct{})
	go func() {
		for {
			msg, err := c2.Read()
			if err != nil {
				return
			}
			if strings.Contains(string(msg), `"late"`) {
				close(lateReply)
			}
		}
	}()
	time.Sleep(2 * drain)
	var callErr error
	select {
	case <-server.Done():
	default:
		callErr = server.Call(testCtx(t, wait), "x", nil, nil)
	}
	// A call from the remote, long after DrainTimeout.
	time.Sleep(5 * drain)
	served := make(chan error, 1)
	go func() {
		served <- c2.Write([]byte(`{"jsonrpc":"2.0","id":"late","method":"c"}`))
	}()
	const bound = 3 * time.Second
	select {
	case <-server.Done():
	case <-time.After(bound):
		t.Errorf("the server has not ended %v after a clean Gone with DrainTimeout %v; meanwhile its own Call failed with %v "+
			"while Done was open", bound, drain, callErr)
	}
	select {
	case <-lateReply:
		t.Errorf("a call written %v after the clean Gone (DrainTimeout %v) was served and answered", 2*drain+drain/4+5*drain, drain)
	case <-time.After(time.Second):
	}
	select {
	case <-served:
	case <-time.After(wait):
		c2.Close()
		<-served
	}
}

// hookConn calls onWrite with each message before it returns from Write.
type hookConn struct {
	Conn
	onWrite func(msg []byte)
}

func (c *hookConn) Write(msg []byte) error {
	err := c.Conn.Write(msg)
	c.onWrite(msg)
	return err
}

// TestCtxEndedWhileQueuedNeverSent: the package doc promises that a
// message whose ctx ends while it is still queued is never sent. The
// writer does not look at a message's ctx: it takes whatever is queued,
// and only the caller, once scheduled, withdraws its message. Here the
// ctx of a Notify queued behind a message being written ends during that
// write (the message is still queued: nothing has taken it), and the
// writer takes it right after.
func TestCtxEndedWhileQueuedNeverSent(t *testing.T) {
	const tries = 200
	c1, c2 := Pipe()
	var cancelNext atomic.Pointer[context.CancelFunc]
	var p *Peer
	hc := &hookConn{Conn: c1, onWrite: func(msg []byte) {
		if !strings.Contains(string(msg), `"first"`) {
			return
		}
		f := cancelNext.Load()
		if f == nil {
			return
		}
		// Wait until the second Notify is queued, then end its ctx
		// while it still is.
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			p.out.mu.Lock()
			n := len(p.out.q)
			p.out.mu.Unlock()
			if n > 0 {
				break
			}
			time.Sleep(10 * time.Microsecond)
		}
		(*f)()
	}}
	p = NewPeer(hc)
	cleanupPeer(t, p)
	r := startRaw(t, c2)
	sentAnyway, returnedErr := 0, 0
	for i := range tries {
		ctx1, cancel1 := context.WithCancel(context.Background())
		ctx2, cancel2 := context.WithCancel(context.Background())
		cancelNext.Store(&cancel2)
		first := make(chan error, 1)
		go func() { first <- p.Notify(ctx1, "first", []int{i}) }()
		// Queue the second once the first is being written.
		eventually(t, "the first being written", func() bool {
			p.out.mu.Lock()
			defer p.out.mu.Unlock()
			return p.out.running && len(p.out.q) == 0 && p.out.bytes > 0
		})
		err2 := p.Notify(ctx2, "second", []int{i})
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		cancel1()
		cancel2()
		cancelNext.Store(nil)
		if err2 != nil {
			returnedErr++
		}
		r.recv() // first
		// Is the second on the wire? A probe follows it.
		if err := p.Notify(context.Background(), "probe", nil); err != nil {
			t.Fatal(err)
		}
		for {
			msg := string(r.recv())
			if strings.Contains(msg, `"second"`) {
				sentAnyway++
				continue
			}
			if strings.Contains(msg, `"probe"`) {
				break
			}
		}
	}
	if sentAnyway > 0 {
		t.Errorf("of %d Notifies whose ctx ended while they were still queued, %d were sent (%d of all returned an error)",
			tries, sentAnyway, returnedErr)
	}
}

// TestLongIDAnsweredWithinLimit: the Internal error that replaces a
// reply longer than the Conn carries (tooLargeError) holds the call's id,
// and an id may take nearly the whole limit: then the replacement is over
// the limit too. A reply sent alone is then written over the limit
// anyway (sendReply's in-place write does not check the size), and a
// batch element's is dropped with its whole array (send checks and fails),
// so that call gets no answer. The read loop's refusals (the control
// queue) are not checked either.
func TestLongIDAnsweredWithinLimit(t *testing.T) {
	const limit = 16 << 10
	// An id of 16,300 bytes: a batch of a short call and a call with it
	// fits in 16 KiB (16,376 bytes), the Internal error with it does not
	// (about 16,390).
	long := `"` + strings.Repeat("i", 16300-2) + `"`
	res := strings.Repeat("r", 100)
	h := mux(t, map[string]HandlerFunc{"m": func(context.Context, *Request) (any, error) { return res, nil }})
	t.Run("alone", func(t *testing.T) {
		c1, c2 := Pipe()
		sc := &capConn{Conn: c1, max: limit}
		p := NewPeer(sc, Options{Handler: h})
		cleanupPeer(t, p)
		r := startRaw(t, c2)
		got := r.call(`{"jsonrpc":"2.0","id":` + long + `,"method":"m"}`)
		if over := sc.overCap(); len(over) > 0 {
			t.Errorf("a message of %v bytes written over the %d-byte limit (%.60s...)", over, limit, got)
		}
	})
	t.Run("in a batch", func(t *testing.T) {
		c1, c2 := Pipe()
		sc := &capConn{Conn: c1, max: limit}
		p := NewPeer(sc, Options{Handler: h})
		cleanupPeer(t, p)
		r := startRaw(t, c2)
		r.send(`[{"jsonrpc":"2.0","id":1,"method":"m"},{"jsonrpc":"2.0","id":` + long + `,"method":"m"}]`)
		ids := map[string]bool{}
		deadline := time.After(10 * time.Second) // generous: a loaded machine; it ends when both come
	collect:
		for len(ids) < 2 {
			select {
			case msg := <-r.msgs:
				var arr []map[string]json.RawMessage
				if json.Unmarshal(msg, &arr) == nil {
					for _, e := range arr {
						ids[string(e["id"])[:min(8, len(e["id"]))]] = true
					}
				}
			case <-deadline:
				break collect
			}
		}
		if over := sc.overCap(); len(over) > 0 {
			t.Errorf("a message of %v bytes written over the %d-byte limit", over, limit)
		}
		if len(ids) < 2 {
			t.Errorf("a batch of 2 calls got %d answers within 10 s (ids %v)", len(ids), ids)
		}
	})
	t.Run("refused while shutting down", func(t *testing.T) {
		c1, c2 := Pipe()
		sc := &capConn{Conn: c1, max: limit}
		hold := make(chan struct{})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(hold) }) })
		entered := make(chan struct{})
		hh := mux(t, map[string]HandlerFunc{"hold": func(ctx context.Context, _ *Request) (any, error) {
			close(entered)
			<-hold
			return nil, nil
		}})
		p := NewPeer(sc, Options{Handler: hh})
		cleanupPeer(t, p)
		r := startRaw(t, c2)
		r.send(`{"jsonrpc":"2.0","id":0,"method":"hold"}`)
		// The handler runs before Shutdown starts: with nothing in flight
		// Shutdown closed the connection before the refused call was
		// written ("use of closed network connection", once under load).
		select {
		case <-entered:
		case <-time.After(wait):
			t.Fatal("the hold handler never ran")
		}
		shut := make(chan error, 1)
		go func() { shut <- p.Shutdown(testCtx(t, wait)) }()
		eventually(t, "draining", p.inbound.draining)
		// The refusal (about 75 bytes and the id) is longer than a reply
		// the handler would send: an id of 16,340 bytes.
		longer := `"` + strings.Repeat("i", 16340-2) + `"`
		r.call(`{"jsonrpc":"2.0","id":` + longer + `,"method":"m"}`)
		if over := sc.overCap(); len(over) > 0 {
			t.Errorf("a refusal of %v bytes written over the %d-byte limit", over, limit)
		}
		once.Do(func() { close(hold) })
		<-shut
	})
}

// TestNullIDErrorFailsInterceptedBatch: Call's doc says an id-null
// error fails the waiting calls when it can only answer their message:
// "this call alone, or one Batch". With an interceptor (a logger that
// passes everything on), a Batch's calls, sent in one array, are pending
// one by one rather than as a group, and the error fails none of them:
// the Batch waits for its ctx. Without the interceptor it fails at once.
func TestNullIDErrorFailsInterceptedBatch(t *testing.T) {
	for _, intercepted := range []bool{false, true} {
		t.Run(fmt.Sprint("intercepted=", intercepted), func(t *testing.T) {
			var opts Options
			if intercepted {
				opts.Interceptors = []Interceptor{func(ctx context.Context, info *CallInfo, next Invoker) (any, error) {
					return next(ctx)
				}}
			}
			c1, c2 := Pipe()
			client := NewPeer(c1, opts)
			cleanupPeer(t, client)
			r := startRaw(t, c2)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			elems := []BatchElem{{Method: "a"}, {Method: "b"}}
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- client.Batch(ctx, elems) }()
			if msg := r.recv(); msg[0] != '[' {
				t.Fatalf("sent %s, want one array", msg)
			}
			r.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request","data":"batch of 2 exceeds the limit of 1"}}`)
			err := within(t, done, "the batch")
			if err != nil || elems[0].Error == nil || elems[1].Error == nil {
				t.Errorf("Batch = %v after %v, elements %v / %v; want both elements to fail at once with the id-null error",
					err, time.Since(start).Round(time.Millisecond), elems[0].Error, elems[1].Error)
			}
		})
	}
}

// gatedConn is a Conn whose Read waits until open is closed: a remote side
// that reads nothing for a while.
type gatedConn struct {
	Conn
	open chan struct{}
}

func (c *gatedConn) Read() ([]byte, error) {
	<-c.open
	return c.Conn.Read()
}

// TestWaitingRepliesDoNotEndTheConnection: replies waiting for room in
// the outbound queue were charged against MaxQueuedBytes (in 425e108),
// the budget that notifications may overrun up to twice while something
// on this side waits on the remote side; so once more than twice
// MaxQueuedBytes of replies waited for a remote that merely read them
// slowly, the next notification, of any size, ended the connection with
// ErrOverloaded (15 of 16 calls failed). Two Peers of this package,
// default Options, no fault: a client makes 16 concurrent calls for 1 MiB
// results, reads nothing for a moment, and sends a notification.
func TestWaitingRepliesDoNotEndTheConnection(t *testing.T) {
	res := json.RawMessage(`"` + strings.Repeat("r", 1<<20) + `"`)
	var notes atomic.Int64
	h := mux(t, map[string]HandlerFunc{
		"big":  func(context.Context, *Request) (any, error) { return res, nil },
		"note": func(context.Context, *Request) (any, error) { notes.Add(1); return nil, nil },
	})
	c1, c2 := Pipe()
	server := NewPeer(c1, Options{Handler: h})
	gate := &gatedConn{Conn: c2, open: make(chan struct{})}
	client := NewPeer(gate)
	cleanupPeer(t, client)
	cleanupPeer(t, server)
	var once sync.Once
	defer once.Do(func() { close(gate.open) })
	ctx := testCtx(t, 6*wait)
	const calls = 16
	errs := make(chan error, calls)
	for range calls {
		go func() {
			var s string
			errs <- client.Call(ctx, "big", nil, &s)
		}()
	}
	// More than twice MaxQueuedBytes of replies waiting for room (the
	// outbound queue holds 4 MiB of them, one is being written).
	eventually(t, "the replies waiting for room", func() bool {
		server.out.mu.Lock()
		defer server.out.mu.Unlock()
		return server.out.waiters >= 9
	})
	noteErr := client.Notify(ctx, "note", []int{1})
	once.Do(func() { close(gate.open) }) // the client reads its replies now
	failed := 0
	var first error
	for range calls {
		if err := <-errs; err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	select {
	case <-server.Done():
		t.Errorf("the server ended with %v after a notification (Notify: %v); %d of %d calls failed (%v)",
			server.Wait(), noteErr, failed, calls, first)
	default:
		if failed > 0 {
			t.Errorf("%d of %d calls failed: %v", failed, calls, first)
		}
	}
}

// TestBatchResultsCopiedOutOfTheirMessages: the replies to the calls of
// one of our Batches wait in its group until the last one is in, and each
// reply's result is a slice of the message it came in, which stays alive
// whole, counted by no budget. A remote side answers 199 of a Batch's 200
// calls, each with a result of 1 in a message padded to 256 KiB (here with
// whitespace), and withholds the last.
func TestBatchResultsCopiedOutOfTheirMessages(t *testing.T) {
	const n = 200
	c1, c2 := Pipe()
	before := heapInUse()
	client := NewPeer(c1)
	cleanupPeer(t, client)
	r := startRaw(t, c2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	elems := make([]BatchElem, n)
	for i := range elems {
		elems[i] = BatchElem{Method: "m", Result: new(int)}
	}
	done := make(chan error, 1)
	go func() { done <- client.Batch(ctx, elems) }()
	var ids []json.RawMessage
	var req []map[string]json.RawMessage
	if err := json.Unmarshal(r.recv(), &req); err != nil {
		t.Fatal(err)
	}
	for _, e := range req {
		ids = append(ids, e["id"])
	}
	pad := strings.Repeat(" ", 256<<10)
	for _, id := range ids[:n-1] {
		r.send(`[{"jsonrpc":"2.0","id":` + string(id) + `,"result":1}` + pad + `]`)
	}
	r.sync()
	held := heapInUse() - before
	t.Logf("a Batch of %d calls with %d replies in (result 1, each in a 256 KiB message): live heap +%s", n, n-1, mib(held))
	cancel()
	<-done
	// The limits table's whole bound for a connection, with default
	// Options: 2 x 4 MiB inbound, 4 MiB outbound, 1 MiB refusals, one
	// message being read; and slack.
	if limit := int64(13<<20 + 4<<20); held > limit {
		t.Errorf("the client holds %s for %d results of 1, over %s", mib(held), n-1, mib(limit))
	}
}
