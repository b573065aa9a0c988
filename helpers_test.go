package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every blocking step of the tests.
const wait = 5 * time.Second

// testCtx returns a ctx that ends after d or with the test.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// cleanupPeer closes p at the end of the test and waits, within a bound,
// for all its goroutines to finish.
func cleanupPeer(t testing.TB, p *Peer) {
	t.Cleanup(func() {
		p.Close()
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(wait):
			t.Errorf("Peer.Wait did not return within %v of Close", wait)
		}
	})
}

// newPair starts two Peers connected by a Pipe; both are closed and waited
// for when the test ends.
func newPair(t testing.TB, h1, h2 Handler, o1, o2 *Options) (*Peer, *Peer) {
	c1, c2 := Pipe()
	a, b := NewPeer(c1, withHandler(o1, h1)), NewPeer(c2, withHandler(o2, h2))
	cleanupPeer(t, b)
	cleanupPeer(t, a)
	return a, b
}

// rawEnd is the test's side of a Pipe: it writes raw bytes and collects
// every message the other side writes.
type rawEnd struct {
	t    testing.TB
	conn Conn
	msgs chan []byte
	stop chan struct{}
	done chan struct{}
}

// newRaw starts a Peer serving h on one end of a Pipe and returns it with
// the other end, read by a goroutine the test's cleanup stops.
func newRaw(t testing.TB, h Handler, opts *Options) (*Peer, *rawEnd) {
	c1, c2 := Pipe()
	r := startRaw(t, c2)
	p := NewPeer(c1, withHandler(opts, h))
	cleanupPeer(t, p) // runs before the raw end's cleanup
	return p, r
}

// startRaw starts reading conn as the test's raw end.
func startRaw(t testing.TB, conn Conn) *rawEnd {
	r := &rawEnd{t: t, conn: conn, msgs: make(chan []byte, 4096), stop: make(chan struct{}), done: make(chan struct{})}
	go r.readLoop()
	t.Cleanup(func() {
		close(r.stop)
		r.conn.Close()
		<-r.done
	})
	return r
}

func (r *rawEnd) readLoop() {
	defer close(r.done)
	for {
		msg, err := r.conn.Read()
		if err != nil {
			return
		}
		select {
		case r.msgs <- msg:
		case <-r.stop:
			return
		}
	}
}

// send writes one raw message.
func (r *rawEnd) send(msg string) {
	r.t.Helper()
	if err := writeWithin(r.conn, []byte(msg), wait); err != nil {
		r.t.Fatalf("raw write %.60q: %v", msg, err)
	}
}

// sync returns once the Peer's read loop has routed every message sent
// before: the loop handles messages in order and a Pipe write returns only
// when the loop reads it. The message is a reply nobody waits for, dropped
// without an answer.
func (r *rawEnd) sync() {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":"sync","result":0}`)
}

// recv returns the next message the Peer wrote.
func (r *rawEnd) recv() []byte {
	r.t.Helper()
	select {
	case msg := <-r.msgs:
		return msg
	case <-time.After(wait):
		r.t.Fatalf("no message from the Peer within %v", wait)
		return nil
	}
}

// quiet fails if the Peer writes anything within d.
func (r *rawEnd) quiet(d time.Duration) {
	r.t.Helper()
	select {
	case msg := <-r.msgs:
		r.t.Fatalf("unexpected message from the Peer: %s", msg)
	case <-time.After(d):
	}
}

// call sends msg and returns the next message the Peer writes.
func (r *rawEnd) call(msg string) []byte {
	r.t.Helper()
	r.send(msg)
	return r.recv()
}

// expectNoReply checks that msg gets no reply: a follow-up call's reply must
// be the first thing that comes back, and nothing may follow it.
func (r *rawEnd) expectNoReply(msg string) {
	r.t.Helper()
	r.send(msg)
	const probe = `{"jsonrpc":"2.0","id":"probe-after-notification","method":"get_data"}`
	got := r.call(probe)
	if id := rawMember(r.t, got, "id"); string(id) != `"probe-after-notification"` {
		r.t.Fatalf("sent %s\nwant no reply, got %s", msg, got)
	}
	r.quiet(20 * time.Millisecond)
}

// decode unmarshals JSON text for comparison by meaning.
func decode(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	return v
}

// assertJSON checks that got means the same as want. Arrays at the top
// level are compared as multisets: a batch reply may come in any order.
func assertJSON(t testing.TB, got []byte, want string) {
	t.Helper()
	g, w := decode(t, got), decode(t, []byte(want))
	if ws, ok := w.([]any); ok {
		gs, ok := g.([]any)
		if !ok || !sameMultiset(gs, ws) {
			t.Fatalf("got  %s\nwant %s (in any order)", got, want)
		}
		return
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// sameMultiset reports whether a and b hold the same values, each as often.
func sameMultiset(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(a))
next:
	for _, w := range b {
		for i, g := range a {
			if !used[i] && reflect.DeepEqual(g, w) {
				used[i] = true
				continue next
			}
		}
		return false
	}
	return true
}

// rawMember returns the raw text of a member of a JSON object, nil if absent.
func rawMember(t testing.TB, obj []byte, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatalf("not a JSON object %q: %v", obj, err)
	}
	return m[key]
}

// errorCode returns the code of err, which must be an *Error.
func errorCode(t testing.TB, err error) int64 {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T), want an *Error", err, err)
	}
	return e.Code
}

// eventually polls cond until it holds or the bound passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// mux builds a Mux from a method table.
func mux(t testing.TB, methods map[string]HandlerFunc) *Mux {
	t.Helper()
	m := NewMux()
	for name, f := range methods {
		m.Handle(name, f)
	}
	return m
}

// echo returns its params.
func echo(_ context.Context, req *Request) (any, error) { return req.Params, nil }

// sleeper sleeps for the number of milliseconds in params [ms] and returns
// them, or fails when its ctx ends first.
func sleeper(ctx context.Context, req *Request) (any, error) {
	var ms []int
	if err := json.Unmarshal(req.Params, &ms); err != nil || len(ms) != 1 {
		return nil, errInvalidParams(fmt.Errorf("want [ms]"))
	}
	select {
	case <-time.After(time.Duration(ms[0]) * time.Millisecond):
		return ms[0], nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// within receives from ch, failing the test if nothing comes in time.
func within[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// writeWithin writes msg to c, and closes c if the write has not returned
// within d (Close is what stops a Conn's write), so that a test fails
// rather than hangs.
func writeWithin(c Conn, msg []byte, d time.Duration) error {
	t := time.AfterFunc(d, func() { c.Close() })
	defer t.Stop()
	return c.Write(msg)
}

// readWithin reads from c, closing c if nothing comes within d.
func readWithin(c Conn, d time.Duration) ([]byte, error) {
	t := time.AfterFunc(d, func() { c.Close() })
	defer t.Stop()
	return c.Read()
}

// withHandler returns *o (the defaults if o is nil) serving h.
func withHandler(o *Options, h Handler) Options {
	var c Options
	if o != nil {
		c = *o
	}
	c.Handler = h
	return c
}
