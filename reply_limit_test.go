package jsonrpc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// capConn is a Conn that carries messages up to max bytes, as stdio's and
// ws's Conns do: a message over it that arrives is skipped (Read returns
// ErrMessageTooLarge, and the Peer answers it), and it counts the messages
// written over it, which a Peer must never write.
type capConn struct {
	Conn
	max int

	mu   sync.Mutex
	over []int // lengths of the messages written over max
}

func (c *capConn) MaxMessageSize() int { return c.max }

func (c *capConn) Read() ([]byte, error) {
	msg, err := c.Conn.Read()
	if err == nil && len(msg) > c.max {
		return nil, fmt.Errorf("%d bytes over the cap of %d: %w", len(msg), c.max, ErrMessageTooLarge)
	}
	return msg, err
}

func (c *capConn) Write(msg []byte) error {
	if len(msg) > c.max {
		c.mu.Lock()
		c.over = append(c.over, len(msg))
		c.mu.Unlock()
	}
	return c.Conn.Write(msg)
}

func (c *capConn) overCap() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.over...)
}

// capPair starts two Peers over a Pipe whose ends carry at most max bytes.
func capPair(t *testing.T, max int, client, server *Options) (*Peer, *Peer, *capConn, *capConn) {
	t.Helper()
	c1, c2 := Pipe()
	cc, sc := &capConn{Conn: c1, max: max}, &capConn{Conn: c2, max: max}
	cp, sp := NewPeer(cc, withHandler(client, nil)), NewPeer(sc, withHandler(server, server.Handler))
	cleanupPeer(t, sp)
	cleanupPeer(t, cp)
	return cp, sp, cc, sc
}

// TestBatchReplyOverLimitAnswersEveryCall: JSON-RPC 2.0 §5 says every call
// gets a response. A batch whose reply array is longer than the Conn
// carries is answered all the same, in arrays that each fit. On 3db20dd
// the array was replaced by one of Internal errors, and when that too was
// over the limit it was dropped: 300 small calls under a 16 KiB cap got 0
// answers and ran into their ctx (100 calls got 100).
func TestBatchReplyOverLimitAnswersEveryCall(t *testing.T) {
	const limit = 16 << 10
	// Small requests (about 38 bytes each) with replies twice as long:
	// 300 fit in one message, their replies do not.
	res := strings.Repeat("r", 40)
	h := mux(t, map[string]HandlerFunc{"e": func(context.Context, *Request) (any, error) { return res, nil }})
	for _, n := range []int{100, 300} {
		t.Run(fmt.Sprint(n, " calls"), func(t *testing.T) {
			client, _, cc, sc := capPair(t, limit, nil, &Options{Handler: h})
			elems := make([]BatchElem, n)
			results := make([]string, n)
			for i := range elems {
				elems[i] = BatchElem{Method: "e", Result: &results[i]}
			}
			if err := client.Batch(testCtx(t, wait), elems); err != nil {
				t.Fatalf("Batch: %v", err)
			}
			for i := range elems {
				if elems[i].Error != nil || results[i] != res {
					t.Fatalf("element %d: %v, %v", i, results[i], elems[i].Error)
				}
			}
			if over := append(sc.overCap(), cc.overCap()...); len(over) > 0 {
				t.Errorf("messages of %v bytes written over the %d-byte limit", over, limit)
			}
		})
	}
}

// TestBatchReplyElementOverLimitIsAnInternalError: an element whose reply
// alone is longer than the Conn carries gets an Internal error, and its
// siblings their results.
func TestBatchReplyElementOverLimitIsAnInternalError(t *testing.T) {
	const limit = 4 << 10
	h := mux(t, map[string]HandlerFunc{
		"echo": echo,
		"big":  func(ctx context.Context, req *Request) (any, error) { return strings.Repeat("b", 2*limit), nil },
	})
	client, _, _, sc := capPair(t, limit, nil, &Options{Handler: h})
	var a, c []int
	elems := []BatchElem{
		{Method: "echo", Params: []int{1}, Result: &a},
		{Method: "big"},
		{Method: "echo", Params: []int{3}, Result: &c},
	}
	if err := client.Batch(testCtx(t, wait), elems); err != nil {
		t.Fatal(err)
	}
	if elems[0].Error != nil || elems[2].Error != nil || len(a) != 1 || len(c) != 1 {
		t.Errorf("siblings: %v %v, %v %v", a, elems[0].Error, c, elems[2].Error)
	}
	if code := errorCode(t, elems[1].Error); code != CodeInternalError {
		t.Errorf("the element over the limit: %v, want an Internal error", elems[1].Error)
	}
	if over := sc.overCap(); len(over) > 0 {
		t.Errorf("messages of %v bytes written over the %d-byte limit", over, limit)
	}
}

// TestRefusalsOverLimitAnswerEveryCall: the read loop's own answer to a
// batch it refuses whole (shutting down, or overloaded) is held to the
// Conn's limit like any message, and still answers every call. On 3db20dd
// a batch of 300 calls refused while shutting down was answered with one
// array of 25,113 bytes under a 16 KiB cap, which the other side skipped:
// 0 refusals reached its Batch (10 calls: 10).
func TestRefusalsOverLimitAnswerEveryCall(t *testing.T) {
	const limit = 16 << 10
	holding := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	h := mux(t, map[string]HandlerFunc{"hold": func(ctx context.Context, req *Request) (any, error) {
		close(holding)
		<-release
		return nil, nil
	}})
	client, server, cc, sc := capPair(t, limit, nil, &Options{Handler: h})
	ctx := testCtx(t, wait)
	held := make(chan error, 1)
	go func() { held <- client.Call(ctx, "hold", nil, nil) }()
	within(t, holding, "the held handler")
	shut := make(chan error, 1)
	go func() { shut <- server.Shutdown(ctx) }() // waits for "hold"
	eventually(t, "the server draining", server.inbound.draining)
	for _, n := range []int{10, 300} {
		elems := make([]BatchElem, n)
		for i := range elems {
			elems[i] = BatchElem{Method: "e"}
		}
		if err := client.Batch(ctx, elems); err != nil {
			t.Fatalf("Batch of %d: %v", n, err)
		}
		for i := range elems {
			if code := errorCode(t, elems[i].Error); code != CodeShuttingDown {
				t.Fatalf("batch of %d, element %d: %v, want a CodeShuttingDown refusal", n, i, elems[i].Error)
			}
		}
	}
	if over := append(sc.overCap(), cc.overCap()...); len(over) > 0 {
		t.Errorf("messages of %v bytes written over the %d-byte limit", over, limit)
	}
	once.Do(func() { close(release) })
	if err := within(t, held, "the held call"); err != nil {
		t.Errorf("held call: %v", err)
	}
	within(t, shut, "Shutdown")
}
