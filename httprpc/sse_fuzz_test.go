package httprpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// FuzzSSEReader feeds arbitrary bytes to the client's event-stream reader:
// it must not panic, must return no event over its bound, and must end
// (each event consumes input).
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("id: 1-0\n\nid: 1-1\ndata: {\"a\":1}\n\n"))
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n: comment\n\nretry: 10\nevent: x\ndata\n\n"))
	f.Add([]byte("id: 1-1\ndata: cut"))
	f.Add([]byte("data: " + strings.Repeat("x", 300) + "\n\n"))
	f.Add([]byte("\xef\xbb\xbfid: 1\rretry: 50\rdata: {}\r\rid: 2\r\ndata: \r\n\r\nevent: other\ndata: x\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 256
		r := newSSEReader(bytes.NewReader(in), max)
		for range len(in) + 1 {
			data, _, err := r.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errEventTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(data) > max {
				t.Fatalf("an event of %d bytes, over the bound of %d", len(data), max)
			}
		}
		t.Fatalf("more events than input bytes")
	})
}

// FuzzSSERoundTrip pins that what appendEvent writes, the reader gives
// back: the data with its line breaks made "\n" and its empty lines gone
// (whitespace only, for JSON), and the id; data with no line at all is a
// priming event, not dispatched, whose id is kept all the same.
func FuzzSSERoundTrip(f *testing.F) {
	f.Add("1-2", []byte(`{"jsonrpc":"2.0","id":1,"result":[1]}`))
	f.Add("0-7", []byte("{\r\n\"a\":\r1\n}"))
	f.Add("3-0", []byte(""))
	f.Fuzz(func(t *testing.T, id string, data []byte) {
		if strings.ContainsAny(id, "\r\n\x00") {
			return // never an id of ours
		}
		lines := bytes.FieldsFunc(data, func(r rune) bool { return r == '\r' || r == '\n' })
		want := bytes.Join(lines, []byte("\n"))
		stream := appendEvent(nil, id, data)
		stream = appendEvent(stream, "next", []byte("x"))
		r := newSSEReader(bytes.NewReader(stream), len(stream)+1)
		got, gotID, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 { // primed only: the next event comes, the id was kept until it
			if string(got) != "x" || gotID != "next" {
				t.Fatalf("after a priming event: %q %q", got, gotID)
			}
			return
		}
		wantID := id // "id: " then the id: the reader drops that one space
		if len(wantID) > maxEventID {
			wantID = "" // too long to keep: ignored, and no earlier id was seen
		}
		if !bytes.Equal(got, want) || gotID != wantID {
			t.Fatalf("wrote %q id %q (%d bytes), read %q id %q; want %q id %q", data, id, len(id), got, gotID, want, wantID)
		}
	})
}

// FuzzSessionPost posts arbitrary bodies to a live session, taking JSON:
// the server must answer each within a bound (a body it holds to want a
// reply gets one; any other gets 202, and the Peer then sends nothing
// for it), and the session must live on.
func FuzzSessionPost(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`,
		`{"jsonrpc":"2.0","method":"echo","params":[1]}`,
		`[{"jsonrpc":"2.0","id":1,"method":"echo"},{"jsonrpc":"2.0","method":"echo"}]`,
		`{"jsonrpc":"2.0","id":9,"result":1}`, `{bad`, `[]`, `[1,2]`, `{}`, `null`, `"x"`,
		`{"jsonrpc":"2.0","method":"echo","params":5}`, `{"jsonrpc":"1.0","method":"echo"}`,
		`{"jsonrpc":"2.0","METHOD":"echo"}`, `{"jsonrpc":"2.0","method":"echo","id":null}`,
		`{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}`,
	} {
		f.Add([]byte(s))
	}
	m := jsonrpc.NewMux()
	m.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) { return r.Params, nil })
	srv := &SessionServer{Peer: jsonrpc.Options{Handler: m}, StartMethods: []string{"echo"}}
	const ct, js = "Content-Type: application/json", "Accept: application/json"
	sid := serveRecorded(srv, "POST", `{"jsonrpc":"2.0","id":0,"method":"echo"}`, ct, js).Header().Get(SessionIDHeader)
	f.Cleanup(func() { srv.Shutdown(context.Background()) })
	standalone := func() uint64 {
		srv.mu.Lock()
		ss := srv.sessions[sid]
		srv.mu.Unlock()
		if ss == nil {
			return 1 << 63
		}
		ss.mu.Lock()
		defer ss.mu.Unlock()
		return ss.streams[0].last
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := standalone()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req := serveRequest(ctx, body, ct, js, "Mcp-Session-Id: "+sid)
		w := serveRecordedReq(srv, req)
		if ctx.Err() != nil {
			t.Fatalf("no answer within 2 s to %q", body)
		}
		switch w.Code {
		case 200:
			if !json.Valid(w.Body.Bytes()) || w.Body.Len() == 0 {
				t.Fatalf("reply %q to %q: not JSON", w.Body, body)
			}
		case 202:
			// Had the Peer answered, the reply would be on the standalone
			// stream; a sync call makes sure it would be there by now.
			if s := serveRecordedReq(srv, serveRequest(ctx, []byte(`{"jsonrpc":"2.0","id":"sync","method":"echo"}`), ct, js, "Mcp-Session-Id: "+sid)); s.Code != 200 {
				t.Fatalf("sync after %q: %d", body, s.Code)
			}
			if after := standalone(); after != before {
				t.Fatalf("%q got 202, yet the Peer sent %d messages for it", body, after-before)
			}
		case 413:
		default:
			t.Fatalf("%q: status %d %q", body, w.Code, w.Body)
		}
	})
}
