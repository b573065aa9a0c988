package httprpc

import (
	"context"
	"encoding/json"
	"errors"
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

// Dial against servers the specification allows (issue 29, findings 3 to
// 9): each test's server is a few lines of net/http speaking the wire as
// such a server may.

// fakeServer serves h on loopback until the test ends and returns its URL.
func fakeServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs
}

// dialFake dials hs with o, closed when the test ends.
func dialFake(t *testing.T, hs *httptest.Server, o DialOptions) *jsonrpc.Peer {
	t.Helper()
	o.HTTPClient = hs.Client()
	p, err := Dial(testCtx(t, wait), hs.URL, o)
	if err != nil {
		t.Fatal(err)
	}
	cleanupPeer(t, p)
	return p
}

// sseHead answers with an event stream.
func sseHead(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set(SessionIDHeader, "s1")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

// requestID returns the id of the request body holds, raw.
func requestID(t *testing.T, body []byte) string {
	var m struct{ ID json.RawMessage }
	if err := json.Unmarshal(body, &m); err != nil {
		t.Errorf("a POST's body %q: %v", body, err)
	}
	return string(m.ID)
}

// TestDialIgnoresPrimingEvent pins finding 5: the SEP-1699 priming event
// (an id and an empty data line, which the SSE standard does not
// dispatch) is not handed to the Peer, which would answer it with a parse
// error posted back.
func TestDialIgnoresPrimingEvent(t *testing.T) {
	var mu sync.Mutex
	var posted []string
	hs := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		posted = append(posted, string(body))
		mu.Unlock()
		id := requestID(t, body)
		if id == "" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		sseHead(w)
		fmt.Fprintf(w, "id: p1\ndata: \n\nid: p2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":\"ok\"}\n\n", id)
	})
	c := dialFake(t, hs, DialOptions{})
	for i := range 3 {
		var got string
		if err := c.Call(testCtx(t, wait), "initialize", nil, &got); err != nil || got != "ok" {
			t.Fatalf("call %d: %q %v", i, got, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, b := range posted {
		if strings.Contains(b, "-32700") {
			t.Fatalf("the client posted %s: it dispatched a priming event", b)
		}
	}
}

// TestDialHonoursRetry pins finding 6's first half: a POST stream that
// ends cleanly after its priming event (id and retry: 300) is polling: the
// client comes back with Last-Event-ID no sooner than the server asked.
// Only the lower bound is held: a loaded machine comes back later.
func TestDialHonoursRetry(t *testing.T) {
	const retry = 300 * time.Millisecond
	var closedAt atomic.Int64
	delays := make(chan time.Duration, 1)
	var pending atomic.Value
	hs := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			id := requestID(t, body)
			if id == "" {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			pending.Store(id)
			sseHead(w)
			fmt.Fprintf(w, "id: e1\nretry: %d\ndata: \n\n", retry.Milliseconds())
			closedAt.Store(time.Now().UnixNano())
		case http.MethodGet:
			if r.Header.Get(lastEventIDHeader) != "e1" {
				sseHead(w) // the standalone stream: kept open, empty
				<-r.Context().Done()
				return
			}
			select {
			case delays <- time.Since(time.Unix(0, closedAt.Load())):
			default:
			}
			sseHead(w)
			fmt.Fprintf(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":\"polled\"}\n\n", pending.Load())
		}
	})
	c := dialFake(t, hs, DialOptions{})
	var got string
	if err := c.Call(testCtx(t, wait), "initialize", nil, &got); err != nil || got != "polled" {
		t.Fatalf("the call: %q %v", got, err)
	}
	d := within(t, delays, "the resuming GET")
	t.Logf("came back %v after the stream closed (retry %v)", d, retry)
	if d < retry-20*time.Millisecond {
		t.Fatalf("came back after %v, before the server's retry of %v", d, retry)
	}
}

// TestDialPollingIsNotFailure pins finding 6's second half: a server that
// closes a call's stream cleanly again and again (answering each GET with
// 200) is polling, not failing: the call gets its reply on the sixth
// poll, past MaxRetries; and a standalone stream closed cleanly six times
// does not end the session. (Such streams, which end at once with nothing,
// are resumed after a delay doubled each time: TestDialEmptyStreamsBackOff
// holds that; from the server's retry of 5 ms here, minPollDelay lowered
// for the test.)
func TestDialPollingIsNotFailure(t *testing.T) {
	d := minPollDelay
	t.Cleanup(func() { minPollDelay = d }) // after the Peer's cleanup, which comes later and so runs first
	minPollDelay = time.Millisecond
	var polls, gets atomic.Int32
	var pending atomic.Value
	hs := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			id := requestID(t, body)
			if id == "" {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			if polls.Load() >= 6 { // the first call is over: answer at once
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":"at once"}`, id)
				return
			}
			pending.Store(id)
			sseHead(w)
			io.WriteString(w, "id: c0\nretry: 5\ndata: \n\n")
		case r.Header.Get(lastEventIDHeader) == "":
			gets.Add(1)
			sseHead(w)
			io.WriteString(w, "retry: 5\n\n") // the standalone stream, closed at once
		default:
			sseHead(w)
			if polls.Add(1) == 6 {
				fmt.Fprintf(w, "id: c1\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":\"done\"}\n\n", pending.Load())
			}
		}
	})
	c := dialFake(t, hs, DialOptions{MaxRetries: 3})
	var got string
	if err := c.Call(testCtx(t, wait), "initialize", nil, &got); err != nil || got != "done" {
		t.Fatalf("a call polled 6 times: %q %v (%d polls)", got, err, polls.Load())
	}
	for end := time.Now().Add(wait); gets.Load() < 6 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Call(testCtx(t, wait), "initialize", nil, &got); err != nil || got != "at once" || gets.Load() < 6 {
		t.Fatalf("after %d clean ends of the standalone stream: %v", gets.Load(), err)
	}
}

// TestDialResumeRefused405 pins finding 7: a POST stream that ends before
// its reply, on a server that answers the resuming GET with 405 (it has no
// GET streams, as the specification allows), fails the call at once with
// ErrStreamLost, and the Peer ends with it; not at the call's deadline.
func TestDialResumeRefused405(t *testing.T) {
	hs := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no GET here", http.StatusMethodNotAllowed)
			return
		}
		io.Copy(io.Discard, r.Body)
		sseHead(w)
		io.WriteString(w, "id: x1\ndata: \n\n")
	})
	c := dialFake(t, hs, DialOptions{RetryDelay: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := c.Call(ctx, "initialize", nil, nil)
	if !errors.Is(err, ErrStreamLost) || ctx.Err() != nil {
		t.Fatalf("the call: %v, want ErrStreamLost before its deadline", err)
	}
	if err := waitErr(t, "the Peer", c); !errors.Is(err, ErrStreamLost) {
		t.Fatalf("the Peer ended with %v, want ErrStreamLost", err)
	}
}

// TestDialResumesBatch pins finding 8: a batch POST's stream that carries
// one response event per call (as the TypeScript SDK's server sends them)
// and is cut after the first is resumed, and the second call gets its
// reply.
func TestDialResumesBatch(t *testing.T) {
	var resumed atomic.Int32
	var second atomic.Value
	hs := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			var els []struct{ ID json.RawMessage }
			if json.Unmarshal(body, &els) != nil || len(els) != 2 {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			second.Store(string(els[1].ID))
			sseHead(w)
			fmt.Fprintf(w, "id: b1\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":1}\n\n", els[0].ID)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection is cut
		case r.Header.Get(lastEventIDHeader) == "b1":
			resumed.Add(1)
			sseHead(w)
			fmt.Fprintf(w, "id: b2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":2}\n\n", second.Load())
		default:
			http.Error(w, "no", http.StatusMethodNotAllowed)
		}
	})
	c := dialFake(t, hs, DialOptions{RetryDelay: time.Millisecond})
	batch := []jsonrpc.BatchElem{{Method: "a", Result: new(int)}, {Method: "b", Result: new(int)}}
	if err := c.Batch(testCtx(t, wait), batch); err != nil {
		t.Fatalf("the batch: %v (%d resumptions)", err, resumed.Load())
	}
	if *batch[0].Result.(*int) != 1 || *batch[1].Result.(*int) != 2 || batch[1].Error != nil {
		t.Fatalf("results %d %d (%v), %d resumptions", *batch[0].Result.(*int), *batch[1].Result.(*int), batch[1].Error, resumed.Load())
	}
}

// TestDialLoneCRAndBOM pins finding 9 end to end: a server whose event
// stream starts with a byte order mark and ends its lines with a lone CR
// (both valid SSE) is understood.
func TestDialLoneCRAndBOM(t *testing.T) {
	hs := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		sseHead(w)
		fmt.Fprintf(w, "\xef\xbb\xbfid: 1\rdata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":\"cr\"}\r\r", requestID(t, body))
	})
	c := dialFake(t, hs, DialOptions{RetryDelay: time.Millisecond})
	var got string
	if err := c.Call(testCtx(t, wait), "initialize", nil, &got); err != nil || got != "cr" {
		t.Fatalf("a stream with a BOM and lone CRs: %q %v", got, err)
	}
}
