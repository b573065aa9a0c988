package httprpc

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// recordingConn keeps a copy of every message written to it.
type recordingConn struct {
	jsonrpc.Conn
	mu  sync.Mutex
	out [][]byte
}

func (c *recordingConn) Write(msg []byte) error {
	c.mu.Lock()
	c.out = append(c.out, append([]byte(nil), msg...))
	c.mu.Unlock()
	return c.Conn.Write(msg)
}

// TestEncodedReplyAgreesWithParse pins encodedReply, which relies on how a
// Peer encodes messages, against isReply, which parses them, on what a
// real Peer writes: replies and errors to ids of every kind (strings with
// quotes and commas, null, integers past 2^53) and batches of them, and
// the calls, notifications and batches its handlers send.
func TestEncodedReplyAgreesWithParse(t *testing.T) {
	a, b := jsonrpc.Pipe()
	mux := jsonrpc.NewMux()
	mux.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) { return r.Params, nil })
	mux.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(7, `"method": in a message`, nil)
	})
	mux.HandleFunc("callback", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		p := jsonrpc.PeerFromContext(ctx)
		short := func() context.Context { // nobody answers: each waits 50 ms
			c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			t.Cleanup(cancel)
			return c
		}
		_ = p.Notify(ctx, "note", []string{`"id":1`})
		_ = p.Call(short(), "ask", map[string]string{"result": "x"}, nil)
		_ = p.Batch(short(), []jsonrpc.BatchElem{{Method: "ask", Params: []int{1}}, {Method: "note", Notification: true}})
		return "done", nil
	})
	rec := &recordingConn{Conn: b}
	server := jsonrpc.NewPeer(rec, jsonrpc.Options{Handler: mux})
	defer func() { a.Close(); server.Close(); server.Wait() }()
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`,
		`{"jsonrpc":"2.0","id":"a\"b,\"method\":","method":"echo","params":[1]}`,
		`{"jsonrpc":"2.0","id":null,"method":"fail"}`,
		`{"jsonrpc":"2.0","id":12345678901234567890,"method":"fail"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"echo","params":{}},{"jsonrpc":"2.0","id":"s","method":"fail"}]`,
		`{"jsonrpc":"2.0","id":3,"method":"nope"}`,
		`{"jsonrpc":"2.0","id":4,"method":"callback"}`,
		`[1,2]`,
		`{not json`,
	} {
		if err := a.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	// Read what the server sends, up to the callback's reply: 12 messages.
	read := make(chan error, 1)
	go func() {
		for range 12 {
			if _, err := a.Read(); err != nil {
				read <- err
				return
			}
		}
		read <- nil
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("the server did not send its 12 messages in time")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	replies, requests := 0, 0
	for _, m := range rec.out {
		if got, want := encodedReply(m), isReply(m); got != want {
			t.Errorf("%s: encodedReply %v, the parse says %v", m, got, want)
		}
		if isReply(m) {
			replies++
		} else {
			requests++
		}
	}
	if replies < 8 || requests < 3 {
		t.Errorf("%d replies and %d requests written, want at least 8 and 3: %q", replies, requests, rec.out)
	}
}
