package httprpc

// The findings of an independent review of the SessionServer after issue
// 29 (an attacker's and a newcomer's), each pinned by a test that failed
// before its fix.

import (
	"context"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
)

// liveHeap returns the heap live after a collection, as the runtime counts
// it.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestSessionAcceptMostSpecific pins the review's finding 14: in HTTP the
// most specific media range decides (RFC 9110), so
// "application/json;q=0, */*" refuses JSON (and takes an event stream by
// the wildcard) and "*/*, text/event-stream;q=0" refuses an event stream.
// The SessionServer answered each with the type refused (2 of 2).
func TestSessionAcceptMostSpecific(t *testing.T) {
	ts := startSessions(t, &SessionServer{Peer: jsonrpc.Options{Handler: testMux()}})
	sid := startSession(t, ts)
	var wrong []string
	resp, body := rawRequest(t, ts, "POST", `{"jsonrpc":"2.0","id":7,"method":"echo","params":[1]}`,
		"Content-Type: application/json", "Accept: application/json;q=0, */*", SessionIDHeader+": "+sid)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" || !strings.Contains(body, `"result":[1]`) {
		wrong = append(wrong, "POST Accept \"application/json;q=0, */*\": "+resp.Status+" "+ct+", want an event stream")
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.url, nil)
	req.Header.Set("Accept", "*/*, text/event-stream;q=0")
	req.Header.Set(SessionIDHeader, sid)
	gresp, err := ts.hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if gresp.StatusCode != http.StatusNotAcceptable {
		wrong = append(wrong, "GET Accept \"*/*, text/event-stream;q=0\": "+gresp.Status+" "+gresp.Header.Get("Content-Type")+", want 406")
	}
	cancel()
	gresp.Body.Close()
	for _, w := range wrong {
		t.Error(w)
	}
	for accept, want := range map[string][2]float64{ // JSON, event stream
		"application/json, text/event-stream": {1, 1},
		"text/event-stream;q=0.5, */*;q=0.1":   {0.1, 0.5},
		"application/*;q=0, application/json":  {1, 0},
		"text/*, application/json;q=0":         {0, 1},
		"TEXT/EVENT-STREAM;Q=0, */*":           {1, 0},
	} {
		r := &http.Request{Header: http.Header{"Accept": {accept}}}
		j, _ := acceptQ(r, "application/json")
		e, _ := acceptQ(r, "text/event-stream")
		if j != want[0] || e != want[1] {
			t.Errorf("Accept %q: JSON %v, event stream %v; want %v", accept, j, e, want)
		}
	}
}
