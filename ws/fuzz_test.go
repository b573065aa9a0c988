//go:build !js

package ws_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"

	"github.com/peerwire/jsonrpc/internal/wiretest"
)

// fuzzQuiet is how long FuzzWSMessage waits, after the replies it expects,
// for one it does not.
const fuzzQuiet = 3 * time.Millisecond

// FuzzWSMessage sends arbitrary bytes as one text message to a ws.Server
// (a fresh connection for each input), then a probe call, and checks that:
//   - the server never panics (it runs in this process);
//   - a message that is not valid UTF-8 closes the connection with status
//     1007 and gets no reply;
//   - otherwise every reply is valid JSON and valid UTF-8, answers only ids
//     the input holds (or null), each at most as often as the input holds
//     it, and comes as an array exactly when the input is a batch;
//   - exactly one reply comes when the input needs one, and none for a
//     notification, a response or a batch of only those (as worked out with
//     encoding/json, not with the package's own decoder);
//   - the connection stays usable: the probe gets its reply.
func FuzzWSMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}`,
		`{"jsonrpc":"2.0","method":"echo","params":[1]}`,
		`{"jsonrpc":"2.0","method":"panic","id":"p"}`,
		`[{"jsonrpc":"2.0","method":"fail","id":1},{"jsonrpc":"2.0","method":"echo"},1]`,
		`{"jsonrpc":"2.0","id":1,"result":0}`,
		"{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":\"\xff\"}",
		`{"jsonrpc":"2.0","method":"echo","params":["é🙂"],"id":"é"}`,
	} {
		f.Add([]byte(s))
	}
	// No method that can block ("sleep"): every input must finish fast.
	m := jsonrpc.NewMux()
	m.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) { return r.Params, nil })
	m.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(42, "boom", nil)
	})
	m.HandleFunc("panic", func(context.Context, *jsonrpc.Request) (any, error) { panic("boom") })
	srv := &ws.Server{Peer: jsonrpc.Options{Handler: m}}
	hs := httptest.NewServer(srv)
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			f.Errorf("Server.Shutdown: %v", err)
		}
		hs.Close()
	})
	url := "ws" + strings.TrimPrefix(hs.URL, "http")

	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := testCtx(t, wait)
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: hs.Client()})
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		defer c.CloseNow()
		if err := c.Write(ctx, websocket.MessageText, data); err != nil {
			t.Fatalf("write: %v", err)
		}
		if !utf8.Valid(data) {
			_, msg, err := c.Read(ctx)
			if websocket.CloseStatus(err) != websocket.StatusInvalidFramePayloadData {
				t.Fatalf("after a message that is not UTF-8: %q, %v; want close status 1007", msg, err)
			}
			return
		}
		const probe = `{"jsonrpc":"2.0","id":"ws-fuzz-probe-9d2e","method":"echo","params":["ws-fuzz-probe-9d2e"]}`
		if err := c.Write(ctx, websocket.MessageText, []byte(probe)); err != nil {
			t.Fatalf("write probe: %v", err)
		}
		wantReply, wantArray := expectWSReply(data)
		want := 0
		if wantReply {
			want = 1
		}
		var replies [][]byte
		for probed := false; !probed || len(replies) < want; {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read after %d replies (want %d): %v", len(replies), want, err)
			}
			if typ != websocket.MessageText || !json.Valid(msg) || !utf8.Valid(msg) {
				t.Fatalf("reply %v %q is not a text message of valid JSON and UTF-8", typ, msg)
			}
			if string(msg) == `{"jsonrpc":"2.0","id":"ws-fuzz-probe-9d2e","result":["ws-fuzz-probe-9d2e"]}` {
				probed = true
				continue
			}
			if replies = append(replies, msg); len(replies) > want {
				t.Fatalf("replies %q, want %d", replies, want)
			}
		}
		// Nothing more may come. (A Read whose ctx ends drops the
		// connection: the input is done with anyway.)
		qctx, cancel := context.WithTimeout(ctx, fuzzQuiet)
		defer cancel()
		if _, msg, err := c.Read(qctx); err == nil {
			t.Fatalf("unexpected message %q after the replies %q", msg, replies)
		}

		ids := wiretest.InputIDs(data)
		for _, reply := range replies {
			var elems []json.RawMessage
			if isArray := reply[0] == '['; isArray != wantArray {
				t.Fatalf("reply %s: array %v, want %v", reply, isArray, wantArray)
			}
			if json.Unmarshal(reply, &elems) != nil {
				elems = []json.RawMessage{reply}
			}
			for _, el := range elems {
				var obj map[string]json.RawMessage
				if err := json.Unmarshal(el, &obj); err != nil {
					t.Fatalf("reply element %s is not an object", el)
				}
				id := string(obj["id"])
				if id == "null" {
					continue
				}
				if ids[id] == 0 {
					t.Fatalf("reply %s for id %s, which the input does not hold (that often)", el, id)
				}
				ids[id]--
			}
		}
	})
}

// expectWSReply works out with encoding/json whether a Peer must answer
// data, and whether the reply is an array: invalid JSON, an empty array, a
// batch over the default limit of 1,000, and anything but an object at the
// top level get one error object; a batch gets an array unless each element
// needs no reply.
func expectWSReply(data []byte) (reply, array bool) {
	if !json.Valid(data) {
		return true, false
	}
	var elems []json.RawMessage
	if json.Unmarshal(data, &elems) != nil || elems == nil {
		return answered(data), false // not an array
	}
	if len(elems) == 0 || len(elems) > 1000 {
		return true, false
	}
	for _, el := range elems {
		if answered(el) {
			return true, true
		}
	}
	return false, true
}

// answered reports whether one message element needs a reply: it does
// unless it is a response (result or error, no method) or a valid
// notification (no id, "jsonrpc":"2.0", a string method, params absent or
// structured); an invalid request without an id is answered with id null.
func answered(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	var obj map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return true
	}
	_, method := obj["method"]
	_, result := obj["result"]
	_, errMember := obj["error"]
	if !method && (result || errMember) {
		return false
	}
	if _, id := obj["id"]; id {
		return true
	}
	var version, name string
	validNote := len(obj["method"]) > 0 && obj["method"][0] == '"' && json.Unmarshal(obj["method"], &name) == nil &&
		len(obj["jsonrpc"]) > 0 && obj["jsonrpc"][0] == '"' && json.Unmarshal(obj["jsonrpc"], &version) == nil &&
		version == "2.0"
	if p, ok := obj["params"]; ok && p[0] != '{' && p[0] != '[' {
		validNote = false
	}
	return !validNote
}

// TestInvalidUTF8: a text message that is not valid UTF-8 closes the
// connection with status 1007, and the server's Peer ends with a cause
// wrapping ErrInvalidUTF8; valid UTF-8 beyond ASCII is served as usual.
func TestInvalidUTF8(t *testing.T) {
	ts := startServer(t, &ws.Server{Peer: jsonrpc.Options{Handler: testMux(t)}}, nil)
	c := ts.rawDial(t, nil)
	server := ts.nextPeer(t)

	writeRaw(t, c, `{"jsonrpc":"2.0","method":"echo","params":["é🙂"],"id":"é"}`)
	if _, got, err := readRaw(t, c); err != nil || !jsonEqual(t, got, []byte(`{"jsonrpc":"2.0","result":["é🙂"],"id":"é"}`)) {
		t.Fatalf("echo of valid UTF-8: %s, %v", got, err)
	}
	writeRaw(t, c, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[1],\"id\":\"\xff\xfe\"}")
	_, msg, err := readRaw(t, c)
	if got := websocket.CloseStatus(err); got != websocket.StatusInvalidFramePayloadData {
		t.Errorf("after a message that is not UTF-8: %q, %v (status %v), want close status 1007", msg, err, got)
	}
	if err := waitErr(t, "server Wait", server); !errors.Is(err, ws.ErrInvalidUTF8) {
		t.Errorf("server Wait = %v, want it to wrap ws.ErrInvalidUTF8", err)
	}
}
