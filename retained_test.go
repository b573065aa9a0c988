package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The bytes a Peer holds, measured through the runtime (the live heap
// after a collection), not through the Peer's own counters: each test
// here pins a path on which a counter said little while the heap held a
// lot.

// heapInUse returns the bytes of the heap objects a collection found
// live (not what was allocated after it, as MemStats.HeapAlloc counts).
func heapInUse() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// mib formats bytes as MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// stuckConn is a Conn whose Write never returns until Close: a remote
// side that does not read. Read waits for Close too.
type stuckConn struct {
	closed chan struct{}
	once   atomic.Bool
}

func newStuckConn() *stuckConn { return &stuckConn{closed: make(chan struct{})} }

func (c *stuckConn) Read() ([]byte, error) { <-c.closed; return nil, errTestGone }
func (c *stuckConn) Write([]byte) error    { <-c.closed; return errTestGone }
func (c *stuckConn) Close() error {
	if c.once.CompareAndSwap(false, true) {
		close(c.closed)
	}
	return nil
}

// TestWithdrawnMessagesLetGoOfTheirBytes: messages withdrawn from the send
// queue because their callers' ctxs ended give their bytes back to the
// heap, not only to MaxOutboundBytes. Behind a write that never returns,
// 600 Notifies of 64 KiB with a 2 ms ctx each: on 3db20dd the heap grew by
// about 84 MiB against a 256 KiB budget.
func TestWithdrawnMessagesLetGoOfTheirBytes(t *testing.T) {
	const budget = 256 << 10
	before := heapInUse()
	p := NewPeer(newStuckConn(), Options{MaxOutboundBytes: budget})
	cleanupPeer(t, p)
	pad := []string{strings.Repeat("x", 64<<10)}
	for range 600 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
		_ = p.Notify(ctx, "n", pad) // fails with its ctx: nobody reads
		cancel()
	}
	held := heapInUse() - before
	t.Logf("600 withdrawn Notifies of 64 KiB behind a stuck write: the heap grew by %s (budget %s)", mib(held), mib(budget))
	// The budget, one message being written, and slack for the
	// test's own allocations and the buffer pool.
	if limit := int64(4 << 20); held > limit {
		t.Errorf("the Peer holds %s of withdrawn messages, over %s", mib(held), mib(limit))
	}
}

// TestBatchNotificationDoesNotPinItsBatch: the notification of a batch
// that also holds a call with large params keeps only its own bytes while
// it waits for its turn, not the whole batch message. 48 batches of
// [notification, call with 1 MiB params], the notifications held behind a
// busy handler: on 3db20dd the heap grew by 47 MiB with a 4 MiB
// MaxQueuedBytes and no push-back (each notification was charged about
// 326 bytes); sent as separate messages, 0 MiB. Here 24 batches (a 1 MiB
// batch takes about 0.1 s under -race): 26 MiB on 3db20dd.
func TestBatchNotificationDoesNotPinItsBatch(t *testing.T) {
	release := make(chan struct{})
	var notes atomic.Int64
	h := mux(t, map[string]HandlerFunc{
		// The first notification waits for a reply of its own, which
		// lets the calls behind it start (see the package doc) while
		// the later notifications wait for their turn.
		"n": func(ctx context.Context, req *Request) (any, error) {
			if notes.Add(1) == 1 {
				return nil, PeerFromContext(ctx).Call(ctx, "hold", nil, nil)
			}
			return nil, nil
		},
		"c": func(ctx context.Context, req *Request) (any, error) { return len(req.Params), nil },
	})
	cli := mux(t, map[string]HandlerFunc{"hold": func(ctx context.Context, req *Request) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}})
	before := heapInUse()
	client, _ := newPair(t, cli, h, nil, &Options{MaxQueuedBytes: 4 << 20})
	defer close(release)
	big := strings.Repeat("p", 1<<20)
	ctx := testCtx(t, 6*wait)
	for i := range 24 {
		elems := []BatchElem{
			{Method: "n", Params: []int{i}, Notification: true},
			{Method: "c", Params: []string{big}, Result: new(int)},
		}
		if err := client.Batch(ctx, elems); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if elems[1].Error != nil {
			t.Fatalf("batch %d: the call failed: %v", i, elems[1].Error)
		}
	}
	held := heapInUse() - before
	t.Logf("24 batches of [notification, 1 MiB call], notifications held: the heap grew by %s", mib(held))
	// The inbound budget, one batch being read, and slack.
	if limit := int64(8 << 20); held > limit {
		t.Errorf("the server holds %s for 23 queued notifications of a few bytes each, over %s", mib(held), mib(limit))
	}
}

// TestQueuedProgressDoesNotPinItsMessage: a progress value waiting for its
// caller's function keeps only its own bytes, not the whole $/progress
// message it came in. 160 reports of a value of 1 beside a 256 KiB member,
// the function busy, a 1 MiB budget: on 3db20dd the heap grew by 41 MiB
// and nothing overflowed.
func TestQueuedProgressDoesNotPinItsMessage(t *testing.T) {
	const reports = 160
	pad := strings.Repeat("z", 256<<10)
	sent := make(chan struct{})
	srv := mux(t, map[string]HandlerFunc{"work": func(ctx context.Context, req *Request) (any, error) {
		token := rawMember(t, req.Params, "workDoneToken")
		p := PeerFromContext(ctx)
		for range reports {
			params := json.RawMessage(fmt.Sprintf(`{"token":%s,"value":1,"pad":%q}`, token, pad))
			if err := p.Notify(ctx, "$/progress", params); err != nil {
				return nil, err
			}
		}
		close(sent)
		return "done", nil
	}})
	opts := &Options{Progress: LSPProgress, MaxQueuedBytes: 1 << 20}
	before := heapInUse()
	client, _ := newPair(t, nil, srv, opts, &Options{Progress: LSPProgress})
	var got atomic.Int64
	measured := make(chan int64, 1)
	long := testCtx(t, 36*wait) // 40 MiB through a Pipe takes seconds under -race, and more than 30 s at a load average of 15
	ctx := WithProgress(long, func(v json.RawMessage) {
		if got.Add(1) == 1 { // busy until every report has been read
			select {
			case <-sent:
			case <-long.Done():
				t.Error("the server's reports were not all sent in time")
			}
			time.Sleep(50 * time.Millisecond) // the last ones reach the client's read loop
			measured <- heapInUse() - before
		}
	})
	var res string
	if err := client.Call(ctx, "work", map[string]any{}, &res); err != nil {
		t.Fatal(err)
	}
	held := <-measured
	t.Logf("%d progress values of 1 beside a 256 KiB member, function busy: the heap grew by %s; %d values ran", reports, mib(held), got.Load())
	if limit := int64(8 << 20); held > limit {
		t.Errorf("the client holds %s for %d queued progress values of 1 byte, over %s", mib(held), reports, mib(limit))
	}
	if got.Load() != reports {
		t.Errorf("%d of %d progress values ran", got.Load(), reports)
	}
}

// TestLongMethodNamesAreNotKept: the read loop keeps the method names it
// has seen, so that a name is not allocated per request, but not names of
// any length: 256 notifications with method names of 64 KiB each, none of
// them a method of the server's, made the connection hold 16 MiB for its
// whole life on 3db20dd.
func TestLongMethodNamesAreNotKept(t *testing.T) {
	before := heapInUse()
	p, r := newRaw(t, nil, nil)
	name := strings.Repeat("m", 64<<10)
	for i := range 256 {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"%s%d"}`, name, i))
	}
	r.sync()
	held := heapInUse() - before
	t.Logf("256 notifications with 64 KiB method names: the heap grew by %s", mib(held))
	if limit := int64(4 << 20); held > limit {
		t.Errorf("the Peer holds %s after 256 long method names, over %s", mib(held), mib(limit))
	}
	_ = p
}

// TestWaitingReplyIsCounted: a handler's reply that waits for room in the
// outbound queue (the remote side does not read) is counted with the
// inbound work it still is (RetainedBytes), so that what a remote side
// that does not read makes this side hold is seen; it takes no budget
// (TestWaitingRepliesDoNotEndTheConnection): the handler keeps its slot
// meanwhile, so at most MaxConcurrent replies wait. On 3db20dd nothing
// counted it.
func TestWaitingReplyIsCounted(t *testing.T) {
	const replySize = 40 << 10
	res := strings.Repeat("r", replySize)
	h := mux(t, map[string]HandlerFunc{"big": func(context.Context, *Request) (any, error) { return res, nil }})
	c1, c2 := Pipe() // c2 is written but never read
	p := NewPeer(c1, Options{Handler: h, MaxConcurrent: 4, MaxQueuedBytes: 64 << 10, MaxOutboundBytes: 16 << 10})
	cleanupPeer(t, p)
	defer c2.Close()
	for i := range 2 {
		// The first reply is being written (the write blocks: nobody
		// reads), the second waits for room.
		if err := writeWithin(c2, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"big"}`, i), wait); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the second reply charged while it waits for room", func() bool {
		in, _, _ := RetainedBytes(p)
		return in >= replySize
	})
}
