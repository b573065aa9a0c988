package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// logRecorder is a slog.Handler that keeps every record, for tests that
// check what a Peer logs.
type logRecorder struct {
	mu   sync.Mutex
	recs []logRecord
}

type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	h.recs = append(h.recs, rec)
	h.mu.Unlock()
	return nil
}

// A Peer's logger is used as given: no attributes or groups are added.
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// find returns the records at level whose message starts with prefix.
func (h *logRecorder) find(level slog.Level, prefix string) []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logRecord
	for _, r := range h.recs {
		if r.level == level && strings.HasPrefix(r.msg, prefix) {
			out = append(out, r)
		}
	}
	return out
}

const droppedReply = "jsonrpc: dropped a response nobody waits for"

// TestStrayRepliesLoggedNotMisrouted: while calls are in flight, replies
// that belong to no waiting call arrive: a late reply to a cancelled call,
// a second reply to an answered call, a reply to an id never sent, and one
// to the id the next call will get but has not sent yet. Each is dropped
// with one record naming its id (Debug for the late reply, which is normal
// life; Warn for the others), and every call in flight, and the call made
// after them with that very id, gets its own result.
func TestStrayRepliesLoggedNotMisrouted(t *testing.T) {
	logs := &logRecorder{}
	p, r := newRaw(t, nil, &Options{Logger: slog.New(logs), Cancel: LSPCancel})
	ctx := testCtx(t, wait)
	reply := func(id, result string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%q}`, id, result)
	}

	// A call cancelled before its reply came.
	cctx, cancel := context.WithCancel(ctx)
	res := callAsync(p, cctx, "cancelled", nil)
	cancelled := parseWire(t, r.recv())
	cancel()
	if got := within(t, res, "the cancelled call"); got.err != context.Canceled {
		t.Fatalf("cancelled call = %q, %v", got.s, got.err)
	}
	if c := parseWire(t, r.recv()); c.Method != "$/cancelRequest" {
		t.Fatalf("want the cancel notification, got %+v", c)
	}
	// A call answered once.
	res = callAsync(p, ctx, "answered", nil)
	answered := parseWire(t, r.recv())
	r.send(reply(string(answered.ID), "answered"))
	if got := within(t, res, "the answered call"); got.err != nil || got.s != "answered" {
		t.Fatalf("answered call = %q, %v", got.s, got.err)
	}

	// Calls in flight while the strays arrive.
	const inFlight = 8
	results := make([]<-chan callResult, inFlight)
	ids := make([]string, inFlight)
	for i := range results {
		results[i] = callAsync(p, ctx, "inflight", []int{i})
	}
	for range inFlight {
		w := parseWire(t, r.recv())
		var params []int
		if err := json.Unmarshal(w.Params, &params); err != nil || len(params) != 1 {
			t.Fatalf("request %+v", w)
		}
		ids[params[0]] = string(w.ID)
	}
	notYetSent := strconv.FormatInt(p.nextID.Load()+1, 10)
	strays := map[string]string{
		string(cancelled.ID): "late reply to a cancelled call",
		string(answered.ID):  "second reply",
		`"never-sent"`:       "reply to an id never sent",
		notYetSent:           "reply to an id not sent yet",
	}
	// The strays interleaved with the replies to half the calls in
	// flight, then the other half answered in a batch.
	i := 0
	for id := range strays {
		r.send(reply(id, "stray"))
		r.send(reply(ids[i], "own "+strconv.Itoa(i)))
		i++
	}
	var batch []string
	for ; i < inFlight; i++ {
		batch = append(batch, reply(ids[i], "own "+strconv.Itoa(i)))
	}
	r.send("[" + strings.Join(batch, ",") + "]")
	for i, res := range results {
		if got := within(t, res, "a call in flight"); got.err != nil || got.s != "own "+strconv.Itoa(i) {
			t.Errorf("call in flight %d = %q, %v; want its own result", i, got.s, got.err)
		}
	}

	// The call made after the strays has the id one of them used.
	res = callAsync(p, ctx, "later", nil)
	later := parseWire(t, r.recv())
	if string(later.ID) != notYetSent {
		t.Fatalf("the next call has id %s, want %s", later.ID, notYetSent)
	}
	select {
	case got := <-res:
		t.Fatalf("the later call returned %q, %v before its reply: a stray was held for it", got.s, got.err)
	case <-time.After(20 * time.Millisecond):
	}
	r.send(reply(notYetSent, "own later"))
	if got := within(t, res, "the later call"); got.err != nil || got.s != "own later" {
		t.Errorf("later call = %q, %v; want its own result", got.s, got.err)
	}

	// The read loop routed every stray before the later reply.
	warned := map[string]int{}
	for _, rec := range logs.find(slog.LevelWarn, droppedReply) {
		warned[rec.attrs["id"]]++
	}
	if n := len(logs.find(slog.LevelDebug, "jsonrpc: dropped a late reply")); n != 1 {
		t.Errorf("late reply to a cancelled call: %d Debug records, want 1", n)
	}
	delete(strays, string(cancelled.ID))
	for id, what := range strays {
		if warned[id] != 1 {
			t.Errorf("%s (id %s): %d Warn records, want 1", what, id, warned[id])
		}
		delete(warned, id)
	}
	for id, n := range warned {
		t.Errorf("%d Warn records for id %s, which had its reply", n, id)
	}
	if n := pendingLen(p); n != 0 {
		t.Errorf("%d calls left pending", n)
	}
}
