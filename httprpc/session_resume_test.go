package httprpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// cutter passes requests to h, and cuts the connection of up to cuts
// event-stream responses (those of POSTs, and of GETs resuming a POST's
// stream) in the middle of their at bytes: the part before goes out, then
// the connection is closed, as a network failure would leave it.
type cutter struct {
	h    http.Handler
	at   int
	cuts atomic.Int32
}

func (c *cutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(lastEventIDHeader)
	if (r.Method == "POST" || id != "" && !strings.HasPrefix(id, "0-")) && c.cuts.Add(-1) >= 0 {
		w = &cutWriter{ResponseWriter: w, left: c.at}
	}
	c.h.ServeHTTP(w, r)
}

type cutWriter struct {
	http.ResponseWriter
	left int
}

func (w *cutWriter) Write(b []byte) (int, error) {
	if len(b) < w.left {
		w.left -= len(b)
		return w.ResponseWriter.Write(b)
	}
	_, _ = w.ResponseWriter.Write(b[:w.left])
	_ = http.NewResponseController(w.ResponseWriter).Flush()
	panic(http.ErrAbortHandler) // net/http closes the connection
}

func (w *cutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestSessionResumeAfterCut pins resumption: a call's event stream is cut
// three times in the middle of an event (the POST's, then two resumptions);
// the client resumes it with Last-Event-ID each time, and every
// notification the handler sent arrives exactly once, in order, followed by
// the reply. The session goes on after.
func TestSessionResumeAfterCut(t *testing.T) {
	const n = 200
	m := testMux()
	m.HandleFunc("count", func(ctx context.Context, r *jsonrpc.Request) (any, error) {
		p := jsonrpc.PeerFromContext(ctx)
		for i := range n {
			if err := p.Notify(ctx, "tick", []int{i}); err != nil {
				return nil, err
			}
			if i%50 == 0 {
				time.Sleep(time.Millisecond) // let some go out before the rest
			}
		}
		return "done", nil
	})
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: m}, StreamRetry: time.Millisecond} // the resumptions, not their delay
	cut := &cutter{h: srv, at: 1500}
	cut.cuts.Store(3)
	ts := startSessionsWith(t, srv, func(hs *httptest.Server) { hs.Config.Handler = cut })

	var mu sync.Mutex
	var ticks []int
	client := jsonrpc.NewMux()
	client.HandleFunc("tick", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		var v []int
		if err := json.Unmarshal(r.Params, &v); err != nil {
			return nil, err
		}
		mu.Lock()
		ticks = append(ticks, v[0])
		mu.Unlock()
		return nil, nil
	})
	c := ts.dial(t, client, DialOptions{RetryDelay: 5 * time.Millisecond})
	ctx := testCtx(t, wait)
	var got string
	if err := c.Call(ctx, "count", nil, &got); err != nil || got != "done" {
		t.Fatalf("count: %q %v", got, err)
	}
	if left := cut.cuts.Load(); left > 0 {
		t.Fatalf("%d cuts not made: the test did not cut the stream", left)
	}
	deadline := time.Now().Add(wait)
	for {
		mu.Lock()
		k := len(ticks)
		mu.Unlock()
		if k >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ticks) != n {
		t.Fatalf("%d notifications arrived, want %d", len(ticks), n)
	}
	for i, v := range ticks {
		if v != i {
			t.Fatalf("notification %d is tick %d: lost, repeated or reordered (%v)", i, v, ticks[max(0, i-3):i+1])
		}
	}
	if err := c.Call(ctx, "echo", []int{1}, nil); err != nil {
		t.Fatalf("a call after the resumptions: %v", err)
	}
}

// TestSessionResumeRaw pins resumption on the wire: a GET with the
// Last-Event-ID of a POST stream's event replays that stream's events after
// it, its reply last, and then ends; one with the id of its last event gets
// nothing more.
func TestSessionResumeRaw(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	sid := startSession(t, ts)
	resp, body := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":7,"method":"echo","params":[7]}`,
		"Content-Type: application/json", "Accept: text/event-stream", "Mcp-Session-Id: "+sid)
	if resp.StatusCode != 200 {
		t.Fatalf("POST: %s", resp.Status)
	}
	// The stream: a priming event (its id, the retry delay and empty data),
	// then the reply.
	var ids []string
	for _, line := range strings.Split(body, "\n") {
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, id)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("event ids %v in %q, want a priming one and the reply's", ids, body)
	}
	resp, replay := rawRequest(t, ts, "GET", "", "Accept: text/event-stream", "Mcp-Session-Id: "+sid, "Last-Event-ID: "+ids[0])
	if resp.StatusCode != 200 || !strings.Contains(replay, `data: {"jsonrpc":"2.0","id":7,"result":[7]}`) ||
		!strings.Contains(replay, "id: "+ids[1]+"\n") {
		t.Fatalf("resumed from the priming event: %s %q", resp.Status, replay)
	}
	resp, rest := rawRequest(t, ts, "GET", "", "Accept: text/event-stream", "Mcp-Session-Id: "+sid, "Last-Event-ID: "+ids[1])
	if resp.StatusCode != 200 || strings.Contains(rest, "data: {") {
		t.Fatalf("resumed after the reply: %s %q, want no data", resp.Status, rest)
	}
}

// TestSessionResumeEvicted pins what happens past the buffer: once the
// events after an id are no longer kept (MaxBufferedBytes made room for
// newer ones), a GET resuming from it gets 410 Gone.
func TestSessionResumeEvicted(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, MaxBufferedBytes: 4096})
	sid := startSession(t, ts)
	var first string
	for i := range 40 {
		resp, body := rawRequest(t, ts, "POST", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":["%s"]}`, i, strings.Repeat("x", 200)),
			"Content-Type: application/json", "Accept: text/event-stream", "Mcp-Session-Id: "+sid)
		if resp.StatusCode != 200 {
			t.Fatalf("POST %d: %s", i, resp.Status)
		}
		if i == 0 {
			first, _, _ = strings.Cut(strings.TrimPrefix(body, "id: "), "\n")
		}
	}
	resp, _ := rawRequest(t, ts, "GET", "", "Accept: text/event-stream", "Mcp-Session-Id: "+sid, "Last-Event-ID: "+first)
	if resp.StatusCode != http.StatusGone {
		t.Fatalf("resuming the first stream after 40 more: %s, want 410", resp.Status)
	}
}

// TestSessionCallbackOnPostStream pins, on the wire, that what a handler
// sends while it serves a POST's call goes on that POST's event stream, in
// order, before the reply: its progress, then its call back to the
// client; the client answers that call with a POST of its own (202); then
// come the handler's last progress and the reply, and the stream ends.
// Nothing of it goes on the GET stream.
func TestSessionCallbackOnPostStream(t *testing.T) {
	m := testMux()
	m.HandleFunc("ask", func(ctx context.Context, r *jsonrpc.Request) (any, error) {
		jsonrpc.ReportProgress(ctx, map[string]any{"progress": 1})
		var answer string
		if err := jsonrpc.PeerFromContext(ctx).Call(ctx, "sample", nil, &answer); err != nil {
			return nil, err
		}
		jsonrpc.ReportProgress(ctx, map[string]any{"progress": 2})
		return answer, nil
	})
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: m, Progress: jsonrpc.MCPProgress}}
	ts := startSessions(t, srv)
	sid := startSession(t, ts)

	req, _ := http.NewRequestWithContext(testCtx(t, wait), "POST", ts.url,
		strings.NewReader(`{"jsonrpc":"2.0","id":"a","method":"ask","params":{"_meta":{"progressToken":"t"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(SessionIDHeader, sid)
	resp, err := ts.hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	r := newSSEReader(resp.Body, 1<<20)
	next := func() map[string]json.RawMessage {
		t.Helper()
		data, _, err := r.next()
		if err != nil {
			t.Fatalf("the stream: %v", err)
		}
		var msg map[string]json.RawMessage
		if err := json.Unmarshal(data, &msg); err != nil {
			t.Fatal(err)
		}
		return msg
	}
	if msg := next(); string(msg["method"]) != `"notifications/progress"` {
		t.Fatalf("first event %v, want the first progress", msg)
	}
	call := next()
	if string(call["method"]) != `"sample"` {
		t.Fatalf("second event %v, want the call back", call)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"sampled"}`, call["id"])
	if resp, body := rawRequest(t, ts, "POST", answer, "Content-Type: application/json", "Mcp-Session-Id: "+sid); resp.StatusCode != 202 {
		t.Fatalf("answering the call back: %s %q", resp.Status, body)
	}
	if msg := next(); string(msg["method"]) != `"notifications/progress"` {
		t.Fatalf("third event %v, want the second progress", msg)
	}
	if msg := next(); string(msg["id"]) != `"a"` || string(msg["result"]) != `"sampled"` {
		t.Fatalf("fourth event %v, want the reply", msg)
	}
	if _, _, err := r.next(); err != io.EOF {
		t.Fatalf("after the reply: %v, want the stream's end", err)
	}
	srv.mu.Lock()
	ss := srv.sessions[sid]
	srv.mu.Unlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if n := ss.streams[0].last; n != 0 {
		t.Fatalf("%d messages went on the standalone stream", n)
	}
}

// TestSessionSentKeptBounded pins what a session keeps for resumption of
// events its client has taken: at most a quarter of MaxBufferedBytes,
// oldest dropped first, with the counts matching what the events and the
// streams kept hold (see cost and streamOverhead).
func TestSessionSentKeptBounded(t *testing.T) {
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}, MaxBufferedBytes: 16 << 10}
	ts := startSessions(t, srv)
	sid := startSession(t, ts)
	for i := range 60 {
		resp, _ := rawRequest(t, ts, "POST", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":["%s"]}`, i, strings.Repeat("y", 1000)),
			"Content-Type: application/json", "Accept: text/event-stream", "Mcp-Session-Id: "+sid)
		if resp.StatusCode != 200 {
			t.Fatalf("POST %d: %s", i, resp.Status)
		}
	}
	srv.mu.Lock()
	ss := srv.sessions[sid]
	srv.mu.Unlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	total, sent := len(ss.done)*streamOverhead, 0
	for _, st := range ss.streams {
		for _, e := range st.events {
			total += cost(e.data)
			if e.seq <= st.sent {
				sent += cost(e.data)
			}
		}
	}
	if total != ss.bytes || sent != ss.sentBytes {
		t.Fatalf("counted %d bytes kept, %d sent; the events hold %d and %d", ss.bytes, ss.sentBytes, total, sent)
	}
	if sent > 4<<10 || sent == 0 {
		t.Fatalf("%d bytes of sent events kept, want some and at most a quarter of 16 KiB", sent)
	}
}
