package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"testing"
	"unicode/utf8"

	"github.com/peerwire/jsonrpc/internal/wiretest"
)

// fuzzSeeds are the specification's examples and the edge cases, plus a few
// mixed messages.
func fuzzSeeds(f *testing.F) {
	for _, tc := range append(append([]specCase(nil), specExamples...), specEdgeCases...) {
		f.Add([]byte(tc.in))
	}
	for _, s := range []string{
		`[{"jsonrpc":"2.0","id":1,"result":2},{"jsonrpc":"2.0","id":2,"method":"echo","params":[1]}]`,
		`{"jsonrpc":"2.0","id":"x","method":"fail"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"panic"}`,
		`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":[1]}}`,
		`{"jsonrpc":"2.0","\u0069d":"\u00e9","method":"echo","params":{"a":"\""}}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzDecode checks decodeMessage's invariants on arbitrary bytes, and
// cross-checks what it extracts from an object against encoding/json.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, batch := decodeMessage(data)
		if len(msgs) == 0 {
			t.Fatal("no element")
		}
		if !json.Valid(data) {
			if len(msgs) != 1 || batch || msgs[0].invalid == nil || msgs[0].invalid.Code != CodeParseError ||
				msgs[0].resp != nil || !msgs[0].req.ID.IsNull() {
				t.Fatalf("invalid JSON: %d elements, batch %v, first %s", len(msgs), batch, kind(msgs[0]))
			}
			return
		}
		var elems []json.RawMessage
		if batch {
			if json.Unmarshal(data, &elems) != nil || len(elems) != len(msgs) {
				t.Fatalf("batch of %d elements decoded as %d", len(elems), len(msgs))
			}
		} else {
			elems = []json.RawMessage{nil}
		}
		for i, m := range msgs {
			checkElement(t, m, elems[i])
		}
	})
}

// checkElement checks one decoded element; raw is its JSON text when known.
func checkElement(t *testing.T, m message, raw json.RawMessage) {
	t.Helper()
	switch {
	case m.resp != nil: // a response, valid or not: never answered
		if m.req.Method != "" || !m.req.ID.IsZero() || m.req.Params != nil {
			t.Fatalf("a response also carries a request: %+v", m.req)
		}
		if m.invalid == nil && !json.Valid([]byte(m.resp.ID.raw)) {
			t.Fatalf("response id %q", m.resp.ID.raw)
		}
	case m.invalid != nil: // an invalid request: answered under req.ID
		if m.invalid.Code != CodeInvalidRequest && m.invalid.Code != CodeParseError {
			t.Fatalf("invalid element with code %d", m.invalid.Code)
		}
		if m.req.ID.IsZero() || !validIDToken([]byte(m.req.ID.raw)) || !json.Valid([]byte(m.req.ID.raw)) {
			t.Fatalf("invalid element answered under id %q", m.req.ID.raw)
		}
	default: // a request
		if p := m.req.Params; p != nil && p[0] != '{' && p[0] != '[' {
			t.Fatalf("request params %s", p)
		}
		if id := m.req.ID.raw; id != "" && (!validIDToken([]byte(id)) || !json.Valid([]byte(id))) {
			t.Fatalf("request id %q", id)
		}
		if raw == nil {
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("a request from a non-object %s: %v", raw, err)
		}
		var method string
		if json.Unmarshal(obj["method"], &method) != nil ||
			utf8.ValidString(m.req.Method) && method != m.req.Method {
			t.Fatalf("method %q, encoding/json says %s", m.req.Method, obj["method"])
		}
		if string(obj["id"]) != m.req.ID.raw || !bytes.Equal(obj["params"], m.req.Params) {
			t.Fatalf("id %q params %s, encoding/json says %s %s", m.req.ID.raw, m.req.Params, obj["id"], obj["params"])
		}
	}
}

// fuzzMux serves echo, fail and panic.
var fuzzMux = func() *Mux {
	m := NewMux()
	m.HandleFunc("echo", echo)
	m.HandleFunc("fail", func(context.Context, *Request) (any, error) { return nil, errors.New("failed") })
	m.HandleFunc("panic", func(context.Context, *Request) (any, error) { panic("boom") })
	return m
}()

// FuzzPeer writes arbitrary bytes to a Peer that has a call of its own
// waiting for a reply, and checks what comes back: valid JSON, in the shape
// of the input, answering only ids the input holds (or null) and each call
// exactly once, nothing at all for notifications and responses; and the
// waiting call gets the input's response to its id, if there is one, or
// else the reply sent after the input.
func FuzzPeer(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, r := newRaw(t, fuzzMux, nil)
		var pendingResult json.RawMessage
		pendingErr := make(chan error, 1)
		go func() { pendingErr <- p.Call(testCtx(t, wait), "pending", nil, &pendingResult) }()
		pendingID := ID{raw: string(parseWire(t, r.recv()).ID)}

		r.send(string(data))
		r.sync()
		eventually(t, "the Peer to be idle", func() bool {
			d, o := &p.inbound, &p.out
			d.mu.Lock()
			busy := d.active + d.parked + d.queued
			d.mu.Unlock()
			o.mu.Lock()
			defer o.mu.Unlock()
			return busy == 0 && len(o.q) == 0 && (!o.running || o.waiting)
		})
		// Every reply to the input has been written: what comes before
		// the probe's reply is all of it.
		const probe = `{"jsonrpc":"2.0","id":"fuzz-probe-4f1c","method":"echo","params":["fuzz-probe-4f1c"]}`
		r.send(probe)
		var replies [][]byte
		for {
			reply := r.recv()
			if string(reply) == `{"jsonrpc":"2.0","id":"fuzz-probe-4f1c","result":["fuzz-probe-4f1c"]}` {
				break
			}
			replies = append(replies, reply)
		}

		want := expectReplies(data, pendingID)
		if len(replies) > 1 || len(replies) != min(len(want.ids), 1) {
			t.Fatalf("%d reply messages %q, want %d", len(replies), replies, min(len(want.ids), 1))
		}
		ids := wiretest.InputIDs(data)
		got := map[string]int{}
		for _, reply := range replies {
			if !json.Valid(reply) {
				t.Fatalf("invalid JSON reply %q", reply)
			}
			var elems []json.RawMessage
			if reply[0] == '[' {
				if !want.array {
					t.Fatalf("array reply %s to a non-array", reply)
				}
				json.Unmarshal(reply, &elems)
			} else {
				if want.array {
					t.Fatalf("reply %s to a batch is not an array", reply)
				}
				elems = []json.RawMessage{reply}
			}
			for _, el := range elems {
				id := string(rawMember(t, el, "id"))
				got[id]++
				if id == "null" {
					continue
				}
				if ids[id] == 0 {
					t.Fatalf("reply %s for id %s, which no request in the input has", el, id)
				}
				ids[id]--
			}
		}
		if !maps.Equal(got, want.ids) {
			t.Fatalf("replies for ids %v, want %v", got, want.ids)
		}

		// The waiting call: the input answered it, or this does.
		r.send(`{"jsonrpc":"2.0","id":` + pendingID.raw + `,"result":"after"}`)
		err := within(t, pendingErr, "the pending call")
		switch resp := want.resp; {
		case resp == nil:
			if err != nil || string(pendingResult) != `"after"` {
				t.Fatalf("pending call = %s, %v; want the reply sent after the input", pendingResult, err)
			}
		case resp.invalid != nil:
			if !errors.Is(err, ErrInvalidResponse) {
				t.Fatalf("pending call = %s, %v; want ErrInvalidResponse for the input's malformed reply", pendingResult, err)
			}
		case resp.Error != nil:
			var e *Error
			if !errors.As(err, &e) || e.Code != resp.Error.Code || e.Message != resp.Error.Message {
				t.Fatalf("pending call = %v, want the input's error reply %v", err, resp.Error)
			}
		default:
			if err != nil || !bytes.Equal(pendingResult, resp.Result) {
				t.Fatalf("pending call = %s, %v; want the input's reply %s", pendingResult, err, resp.Result)
			}
		}
	})
}

// expected is what a Peer must send back for an input message.
type expected struct {
	ids   map[string]int // raw ids of the reply elements, "null" included
	array bool           // the reply is an array
	resp  *response      // the first response to the pending id, valid or not
}

// expectReplies works out the replies to data from how decodeMessage
// classifies it (FuzzDecode checks that against encoding/json): a call or
// an invalid element is answered under its id (null when it has none), a
// valid notification or a response is not (an error response with id null
// is the waiting call's); a batch over the default
// MaxBatch gets one error with id null and none of it is used.
func expectReplies(data []byte, pending ID) expected {
	msgs, batch := decodeMessage(data)
	want := expected{ids: map[string]int{}, array: batch}
	if batch && len(msgs) > 1000 {
		want.ids["null"], want.array = 1, false
		return want
	}
	for _, m := range msgs {
		switch {
		case m.resp != nil:
			if m.resp.ID == pending && want.resp == nil { // valid or not: it ends the call
				want.resp = m.resp
			}
			// An error naming no call goes to the one call waiting.
			if m.resp.ID.IsNull() && m.resp.Error != nil && want.resp == nil {
				want.resp = m.resp
			}
		case m.invalid != nil:
			id := m.req.ID
			if id.IsZero() {
				id = NullID()
			}
			want.ids[id.raw]++
		case !m.req.IsNotification():
			want.ids[m.req.ID.raw]++
		}
	}
	return want
}
