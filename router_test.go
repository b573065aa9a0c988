package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// routed is one message a Peer wrote through WriteFor.
type routed struct {
	msg  []byte
	read uint64
}

// routerConn is a Conn over one end of a Pipe that records what the Peer
// writes with WriteFor. Its Write fails the test: a Peer must not call it
// on a Router. A message "too large" read from the Pipe is returned as
// ErrMessageTooLarge.
type routerConn struct {
	Conn
	t    testing.TB
	sent chan routed
}

func (c *routerConn) Read() ([]byte, error) {
	msg, err := c.Conn.Read()
	if err == nil && string(msg) == "too large" {
		return nil, fmt.Errorf("read: %w", ErrMessageTooLarge)
	}
	return msg, err
}

func (c *routerConn) Write(msg []byte) error {
	c.t.Errorf("Write called on a Router: %s", msg)
	return c.Conn.Write(msg)
}

func (c *routerConn) WriteFor(msg []byte, read uint64) error {
	c.sent <- routed{append([]byte(nil), msg...), read}
	return c.Conn.Write(msg)
}

var _ Router = (*routerConn)(nil)

// next returns the next message written, failing if it does not carry read.
func (c *routerConn) next(t *testing.T, read uint64) []byte {
	t.Helper()
	r := within(t, c.sent, "a message written with WriteFor")
	if r.read != read {
		t.Fatalf("%s went with ordinal %d, want %d", r.msg, r.read, read)
	}
	return r.msg
}

// TestRouterOrdinals pins which inbound message each outbound message is
// said to belong to: replies, batch replies and the read loop's refusals
// carry the ordinal of the Read they answer; a handler's callbacks,
// notifications and progress carry its request's; anything sent outside a
// handler carries 0.
func TestRouterOrdinals(t *testing.T) {
	pipeA, pipeB := Pipe()
	conn := &routerConn{Conn: pipeA, t: t, sent: make(chan routed, 64)}
	raw := startRaw(t, pipeB)
	type key struct{}
	m := NewMux()
	m.Handle("echo", HandlerFunc(echo))
	var p *Peer
	m.HandleFunc("callback", func(ctx context.Context, req *Request) (any, error) {
		if err := ReportProgress(ctx, map[string]int{"progress": 1}); err != nil {
			return nil, err
		}
		if err := p.Notify(ctx, "note", nil); err != nil {
			return nil, err
		}
		var got string
		err := p.Call(context.WithValue(ctx, key{}, 1), "sample", nil, &got) // derived ctx
		return got, err
	})
	p = NewPeer(conn, Options{Handler: m, MaxBatch: 2, Progress: MCPProgress})
	cleanupPeer(t, p)

	raw.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`) // read 1
	assertJSON(t, conn.next(t, 1), `{"jsonrpc":"2.0","id":1,"result":[1]}`)
	raw.send(`[{"jsonrpc":"2.0","id":2,"method":"echo","params":[2]},{"jsonrpc":"2.0","id":3,"method":"echo","params":[3]}]`) // 2
	assertJSON(t, conn.next(t, 2), `[{"jsonrpc":"2.0","id":2,"result":[2]},{"jsonrpc":"2.0","id":3,"result":[3]}]`)
	raw.send(`{bad`) // 3
	assertJSON(t, rawMember(t, conn.next(t, 3), "id"), `null`)
	raw.send(`[]`) // 4
	assertJSON(t, rawMember(t, conn.next(t, 4), "id"), `null`)
	raw.send(`[{"jsonrpc":"2.0","id":5,"method":"echo"},{"jsonrpc":"2.0","id":6,"method":"echo"},{"jsonrpc":"2.0","id":7,"method":"echo"}]`) // 5: too long
	assertJSON(t, rawMember(t, conn.next(t, 5), "id"), `null`)
	raw.send("too large") // 6
	assertJSON(t, rawMember(t, conn.next(t, 6), "id"), `null`)

	raw.send(`{"jsonrpc":"2.0","id":"cb","method":"callback","params":{"_meta":{"progressToken":"tok"}}}`) // 7
	progress := conn.next(t, 7)
	if got := string(rawMember(t, progress, "method")); got != `"notifications/progress"` {
		t.Fatalf("first message of the handler: %s, want its progress", progress)
	}
	if got := string(rawMember(t, conn.next(t, 7), "method")); got != `"note"` {
		t.Fatalf("second message of the handler is %s, want its notification", got)
	}
	call := conn.next(t, 7)
	raw.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"sampled"}`, rawMember(t, call, "id"))) // 8
	assertJSON(t, conn.next(t, 7), `{"jsonrpc":"2.0","id":"cb","result":"sampled"}`)

	// Outside any handler: 0.
	ctx := testCtx(t, wait)
	if err := p.Notify(ctx, "push", nil); err != nil {
		t.Fatal(err)
	}
	conn.next(t, 0)
	errc := make(chan error, 1)
	go func() { errc <- p.Call(ctx, "ask", nil, nil) }()
	ask := conn.next(t, 0)
	raw.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":null}`, rawMember(t, ask, "id"))) // 9
	if err := within(t, errc, "the call's outcome"); err != nil {
		t.Fatal(err)
	}
	// The ordinals went on counting: the next reply carries 10.
	raw.send(`{"jsonrpc":"2.0","id":10,"method":"echo","params":[10]}`)
	assertJSON(t, conn.next(t, 10), `{"jsonrpc":"2.0","id":10,"result":[10]}`)
	for range 11 {
		raw.recv() // what the Pipe carried
	}
}

// writeConn is a Conn over a Pipe end that records its Writes: a Conn that
// is not a Router.
type writeConn struct {
	Conn
	sent chan []byte
}

func (c *writeConn) Write(msg []byte) error {
	c.sent <- append([]byte(nil), msg...)
	return c.Conn.Write(msg)
}

// TestNonRouterUsesWrite pins that a Conn without WriteFor is written as
// before, replies and a handler's callbacks alike.
func TestNonRouterUsesWrite(t *testing.T) {
	pipeA, pipeB := Pipe()
	conn := &writeConn{Conn: pipeA, sent: make(chan []byte, 8)}
	raw := startRaw(t, pipeB)
	p := NewPeer(conn, Options{Handler: HandlerFunc(echo)})
	cleanupPeer(t, p)
	raw.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`)
	assertJSON(t, within(t, conn.sent, "the reply"), `{"jsonrpc":"2.0","id":1,"result":[1]}`)
	var msg json.RawMessage = raw.recv()
	assertJSON(t, msg, `{"jsonrpc":"2.0","id":1,"result":[1]}`)
}
