package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
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

// FuzzPeer writes arbitrary bytes to a Peer and checks what comes back:
// valid JSON, answering only ids the input holds (or null), in the shape of
// the input.
func FuzzPeer(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, r := newRaw(t, fuzzMux, nil)
		r.send(string(data))
		r.sync()
		eventually(t, "the Peer to be idle", func() bool {
			d, b := &p.inbound, &p.backlog
			d.mu.Lock()
			busy := d.calls.running + d.notes.running + d.parked + d.queued
			d.mu.Unlock()
			b.mu.Lock()
			defer b.mu.Unlock()
			return busy == 0 && !b.writing
		})
		ids := inputIDs(data)
		isArray := json.Valid(data) && bytes.TrimLeft(data, " \t\r\n")[0] == '['
		for {
			var reply []byte
			select {
			case reply = <-r.msgs:
			default:
				return
			}
			if !json.Valid(reply) {
				t.Fatalf("invalid JSON reply %q", reply)
			}
			var elems []json.RawMessage
			if reply[0] == '[' {
				if !isArray {
					t.Fatalf("array reply %s to a non-array", reply)
				}
				json.Unmarshal(reply, &elems)
			} else {
				elems = []json.RawMessage{reply}
			}
			for _, el := range elems {
				id := string(rawMember(t, el, "id"))
				if id == "null" {
					continue
				}
				if ids[id] == 0 {
					t.Fatalf("reply %s for id %s, which no request in the input has", el, id)
				}
				ids[id]--
			}
		}
	})
}

// inputIDs counts the raw ids of the objects at the top level of data or in
// its top-level array.
func inputIDs(data []byte) map[string]int {
	ids := make(map[string]int)
	var elems []json.RawMessage
	if json.Unmarshal(data, &elems) != nil {
		elems = []json.RawMessage{data}
	}
	for _, el := range elems {
		var obj map[string]json.RawMessage
		if json.Unmarshal(el, &obj) == nil {
			if id, ok := obj["id"]; ok {
				ids[string(id)]++
			}
		}
	}
	return ids
}
