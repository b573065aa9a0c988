package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBatchBetweenPeers sends calls and notifications mixed; the later a
// call is in the batch, the sooner its handler finishes.
func TestBatchBetweenPeers(t *testing.T) {
	var mu sync.Mutex
	var notes []string
	h := mux(t, map[string]HandlerFunc{
		"sleep": sleeper,
		"note": func(_ context.Context, req *Request) (any, error) {
			mu.Lock()
			notes = append(notes, string(req.Params))
			mu.Unlock()
			return nil, nil
		},
	})
	a, _ := newPair(t, nil, h, nil, nil)
	const n = 5
	results := make([]int, n)
	var elems []BatchElem
	for i := range n {
		elems = append(elems,
			BatchElem{Method: "sleep", Params: []int{(n - i) * 20}, Result: &results[i]},
			BatchElem{Method: "note", Params: []int{i}, Notification: true})
	}
	if err := a.Batch(testCtx(t, wait), elems); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := elems[2*i].Error; err != nil {
			t.Errorf("element %d: %v", 2*i, err)
		}
		if want := (n - i) * 20; results[i] != want {
			t.Errorf("result %d = %d, want %d", i, results[i], want)
		}
	}
	eventually(t, "the batch's notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(notes) == n
	})
}

// TestBatchRepliesMatchedByID has the remote answer a batch in reverse
// order, with an error element and a reply for an id that is not in the
// batch: each element still gets its own outcome.
func TestBatchRepliesMatchedByID(t *testing.T) {
	p, r := newRaw(t, nil, nil)
	results := make([]string, 3)
	elems := []BatchElem{
		{Method: "m0", Result: &results[0]},
		{Method: "tell", Notification: true},
		{Method: "m1", Result: &results[1]},
		{Method: "m2", Result: &results[2]},
	}
	errc := make(chan error, 1)
	ctx := testCtx(t, wait)
	go func() { errc <- p.Batch(ctx, elems) }()
	var reqs []struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(r.recv(), &reqs); err != nil || len(reqs) != 4 {
		t.Fatalf("batch on the wire: %v %+v", err, reqs)
	}
	if reqs[1].ID != nil {
		t.Fatalf("the notification element has an id: %s", reqs[1].ID)
	}
	reply := fmt.Sprintf(`[
	  {"jsonrpc":"2.0","id":%s,"result":"two"},
	  {"jsonrpc":"2.0","id":"not-ours","result":0},
	  {"jsonrpc":"2.0","id":%s,"error":{"code":-5,"message":"one failed","data":{"why":[1]}}},
	  {"jsonrpc":"2.0","id":%s,"result":"zero"}
	]`, reqs[3].ID, reqs[2].ID, reqs[0].ID)
	r.send(reply)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if results[0] != "zero" || results[2] != "two" || elems[0].Error != nil || elems[3].Error != nil {
		t.Errorf("results %q, errors %v %v", results, elems[0].Error, elems[3].Error)
	}
	var e *Error
	if !errors.As(elems[2].Error, &e) || e.Code != -5 || e.Message != "one failed" || string(e.Data) != `{"why":[1]}` {
		t.Errorf("element 2 error: %#v", elems[2].Error)
	}
}

// TestBatchElementErrors checks application errors per element between
// Peers, with code, message and data intact.
func TestBatchElementErrors(t *testing.T) {
	h := mux(t, map[string]HandlerFunc{
		"echo": echo,
		"fail": func(context.Context, *Request) (any, error) {
			return nil, NewError(1234, "nope", []string{"d"})
		},
	})
	a, _ := newPair(t, nil, h, nil, nil)
	var r0, r2 json.RawMessage
	var bad int
	elems := []BatchElem{
		{Method: "echo", Params: []int{1}, Result: &r0},
		{Method: "fail"},
		{Method: "echo", Params: map[string]int{"x": 2}, Result: &r2},
		{Method: "missing"},
		{Method: "echo", Params: []string{"s"}, Result: &bad},
	}
	if err := a.Batch(testCtx(t, wait), elems); err != nil {
		t.Fatal(err)
	}
	if string(r0) != "[1]" || string(r2) != `{"x":2}` || elems[0].Error != nil || elems[2].Error != nil {
		t.Errorf("results %s %s, errors %v %v", r0, r2, elems[0].Error, elems[2].Error)
	}
	var e *Error
	if !errors.As(elems[1].Error, &e) || e.Code != 1234 || e.Message != "nope" || string(e.Data) != `["d"]` {
		t.Errorf("fail: %#v", elems[1].Error)
	}
	if got := errorCode(t, elems[3].Error); got != CodeMethodNotFound {
		t.Errorf("missing: code %d", got)
	}
	if elems[4].Error == nil || errors.As(elems[4].Error, &e) {
		t.Errorf("an unmarshal failure should be a plain error, got %v", elems[4].Error)
	}
}

// TestBatchOfNotificationsDoesNotWait: the handlers block until the test
// releases them, yet Batch returns once the batch is written. The batch's
// notifications run in order, one at a time, as notifications sent alone
// do (concurrently with Options.ConcurrentNotifications).
func TestBatchOfNotificationsDoesNotWait(t *testing.T) {
	for _, concurrent := range []bool{false, true} {
		t.Run(fmt.Sprint("concurrent=", concurrent), func(t *testing.T) {
			release := make(chan struct{})
			entered := make(chan struct{}, 2)
			h := mux(t, map[string]HandlerFunc{"block": func(ctx context.Context, _ *Request) (any, error) {
				entered <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, nil
			}})
			a, _ := newPair(t, nil, h, nil, &Options{ConcurrentNotifications: concurrent})
			start := time.Now()
			err := a.Batch(testCtx(t, wait), []BatchElem{
				{Method: "block", Notification: true},
				{Method: "block", Notification: true},
			})
			if err != nil || time.Since(start) > time.Second {
				t.Fatalf("Batch: %v after %v", err, time.Since(start))
			}
			within(t, entered, "the first notification handler")
			if concurrent {
				within(t, entered, "the second notification handler, while the first blocks")
			} else {
				select {
				case <-entered:
					t.Fatal("the second notification started before the first returned")
				case <-time.After(20 * time.Millisecond):
				}
			}
			close(release)
			if !concurrent {
				within(t, entered, "the second notification handler")
			}
		})
	}
}

func TestBatchArgumentErrors(t *testing.T) {
	a, _ := newPair(t, nil, mux(t, map[string]HandlerFunc{"echo": echo}), nil, nil)
	ctx := testCtx(t, wait)
	if err := a.Batch(ctx, nil); !errors.Is(err, ErrEmptyBatch) {
		t.Errorf("empty batch: %v", err)
	}
	err := a.Batch(ctx, []BatchElem{{Method: "echo", Params: []int{1}}, {Method: "echo", Params: 3}})
	if !errors.Is(err, ErrInvalidParams) {
		t.Errorf("scalar params: %v", err)
	}
	if err := a.Call(ctx, "echo", "s", nil); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("Call with scalar params: %v", err)
	}
	if n := pendingLen(a); n != 0 {
		t.Errorf("%d calls left pending after failed batches", n)
	}
}

func pendingLen(p *Peer) int {
	p.pending.mu.Lock()
	defer p.pending.mu.Unlock()
	return len(p.pending.calls)
}

// TestIncomingMixedMessage: one array holding a response to our pending
// call and a request is handled element by element.
func TestIncomingMixedMessage(t *testing.T) {
	p, r := newRaw(t, mux(t, map[string]HandlerFunc{"echo": echo}), nil)
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	ctx := testCtx(t, wait)
	go func() {
		var s string
		err := p.Call(ctx, "ask", nil, &s)
		done <- result{s, err}
	}()
	id := rawMember(t, r.recv(), "id")
	r.send(fmt.Sprintf(`[{"jsonrpc":"2.0","id":%s,"result":"answer"},
		{"jsonrpc":"2.0","id":"req","method":"echo","params":[7]}]`, id))
	assertJSON(t, r.recv(), `[{"jsonrpc":"2.0","id":"req","result":[7]}]`)
	if got := <-done; got.err != nil || got.s != "answer" {
		t.Fatalf("Call: %q, %v", got.s, got.err)
	}
}

// TestMaxBatch: an inbound batch longer than the limit gets one Invalid
// Request object, and none of it runs.
func TestMaxBatch(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	h := HandlerFunc(func(_ context.Context, req *Request) (any, error) {
		mu.Lock()
		ran = append(ran, req.Method)
		mu.Unlock()
		return 1, nil
	})
	for _, tc := range []struct {
		limit, n int
		ok       bool
	}{{3, 4, false}, {3, 3, true}, {-1, 1500, true}, {0, 1001, false}, {0, 1000, true}} {
		t.Run(fmt.Sprintf("limit %d batch %d", tc.limit, tc.n), func(t *testing.T) {
			mu.Lock()
			ran = nil
			mu.Unlock()
			_, r := newRaw(t, h, &Options{MaxBatch: tc.limit})
			var elems []string
			for i := range tc.n {
				elems = append(elems, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"m"}`, i))
			}
			reply := r.call("[" + strings.Join(elems, ",") + "]")
			if !tc.ok {
				var e struct {
					ID    json.RawMessage
					Error *Error
				}
				if err := json.Unmarshal(reply, &e); err != nil || string(e.ID) != "null" ||
					e.Error == nil || e.Error.Code != CodeInvalidRequest {
					t.Fatalf("over the limit: got %.200s", reply)
				}
				r.quiet(20 * time.Millisecond)
				mu.Lock()
				defer mu.Unlock()
				if len(ran) != 0 {
					t.Errorf("%d handlers ran", len(ran))
				}
				return
			}
			var replies []json.RawMessage
			if err := json.Unmarshal(reply, &replies); err != nil || len(replies) != tc.n {
				t.Fatalf("within the limit: %d replies, %v", len(replies), err)
			}
		})
	}
}

// TestBatchMalformedElementReply: a malformed reply to one element of a
// batch fails that element with an *InvalidResponseError; the others keep
// their results, and Batch itself succeeds.
func TestBatchMalformedElementReply(t *testing.T) {
	p, r := newRaw(t, nil, nil)
	results := make([]string, 3)
	elems := []BatchElem{{Method: "a", Result: &results[0]}, {Method: "b", Result: &results[1]}, {Method: "c", Result: &results[2]}}
	errc := make(chan error, 1)
	go func() { errc <- p.Batch(testCtx(t, wait), elems) }()
	var reqs []wire
	if err := json.Unmarshal(r.recv(), &reqs); err != nil || len(reqs) != 3 {
		t.Fatalf("batch on the wire: %v %+v", err, reqs)
	}
	r.send(fmt.Sprintf(`[{"jsonrpc":"2.0","id":%s,"result":"A"},{"jsonrpc":"2.0","id":%s,"result":"B","error":{"code":1,"message":"both"}},{"jsonrpc":"2.0","id":%s,"result":"C"}]`,
		reqs[0].ID, reqs[1].ID, reqs[2].ID))
	if err := <-errc; err != nil {
		t.Fatalf("Batch = %v, want nil (one element's reply was malformed)", err)
	}
	var ire *InvalidResponseError
	if !errors.As(elems[1].Error, &ire) || !errors.Is(elems[1].Error, ErrInvalidResponse) {
		t.Errorf("element 1: %v, want an *InvalidResponseError", elems[1].Error)
	}
	if results[0] != "A" || results[2] != "C" || elems[0].Error != nil || elems[2].Error != nil {
		t.Errorf("the others: %q, %v, %v", results, elems[0].Error, elems[2].Error)
	}
}

// TestBatchCtxEndsKeepsAnswered: when ctx ends with one of three calls
// answered, Batch returns ctx's error at once, the answered element keeps
// its result, and the two others are forgotten (a late reply to them is
// not a stray) and cancelled.
func TestBatchCtxEndsKeepsAnswered(t *testing.T) {
	p, r := newRaw(t, nil, &Options{Cancel: LSPCancel})
	results := make([]string, 3)
	elems := []BatchElem{{Method: "a", Result: &results[0]}, {Method: "b", Result: &results[1]}, {Method: "c", Result: &results[2]}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- p.Batch(ctx, elems) }()
	var reqs []wire
	if err := json.Unmarshal(r.recv(), &reqs); err != nil || len(reqs) != 3 {
		t.Fatalf("batch on the wire: %v %+v", err, reqs)
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"B"}`, reqs[1].ID))
	eventually(t, "the first reply to be taken", func() bool { return pendingLen(p) == 2 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Batch = %v, want context.Canceled", err)
	}
	if results[1] != "B" || elems[1].Error != nil {
		t.Errorf("answered element: %q, %v", results[1], elems[1].Error)
	}
	cancelled := map[string]bool{}
	for range 2 {
		w := parseWire(t, r.recv())
		var params struct {
			ID json.RawMessage `json:"id"`
		}
		if w.Method != "$/cancelRequest" || json.Unmarshal(w.Params, &params) != nil {
			t.Fatalf("got %s %s, want a cancel", w.Method, w.Params)
		}
		cancelled[string(params.ID)] = true
	}
	if !cancelled[string(reqs[0].ID)] || !cancelled[string(reqs[2].ID)] {
		t.Errorf("cancelled %v, want the ids of a and c", cancelled)
	}
	if n := pendingLen(p); n != 0 {
		t.Errorf("%d calls left pending", n)
	}
}
