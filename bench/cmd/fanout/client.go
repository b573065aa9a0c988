package main

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
)

// fleet is the subscribers of one server, in the child process.
type fleet struct {
	subs      []*sub
	marker    []byte // what each broadcast in a message holds once
	target    atomic.Int64
	remaining atomic.Int64
	done      chan struct{} // gets a value once remaining reaches 0
	wire      atomic.Int64  // bytes taken, frame headers included
	msgs      atomic.Int64  // messages taken
	lost      atomic.Int64  // subscribers whose connection the server ended
	closing   atomic.Bool   // the child is closing the connections itself
	kind      string
	wg        sync.WaitGroup
}

// sub is one subscriber.
type sub struct {
	c       *websocket.Conn
	count   atomic.Int64 // broadcasts received
	reached atomic.Int64 // the last target it reached
}

// arm sets the count every subscriber is to reach and returns the totals
// so far. Nothing arrives meanwhile: the server publishes once armed.
func (f *fleet) arm(count int64) (wire, msgs int64) {
	select {
	case <-f.done:
	default:
	}
	f.remaining.Store(int64(len(f.subs)) - f.lost.Load())
	f.target.Store(count)
	return f.totals()
}

func (f *fleet) totals() (wire, msgs int64) { return f.wire.Load(), f.msgs.Load() }

func (f *fleet) close() {
	f.closing.Store(true)
	for _, s := range f.subs {
		s.c.CloseNow()
	}
	f.wg.Wait()
}

// frameHeader is the size of the header of an unmasked frame of n bytes.
func frameHeader(n int) int64 {
	switch {
	case n < 126:
		return 2
	case n < 1<<16:
		return 4
	}
	return 10
}

// subscribe opens n connections to addr and subscribes each as kind's
// clients do: ours (a call answered proves the Peer is in the Group: its
// OnConnect ran before it read), ourshub (topic.subscribe) or centrifuge
// (connect and subscribe in its JSON protocol). It returns once every
// subscription is confirmed, the readers running.
func subscribe(kind, addr string, n int) (*fleet, error) {
	f := &fleet{subs: make([]*sub, 0, n), done: make(chan struct{}, 1), kind: kind}
	var hello, reply []byte
	opts := &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled}
	switch kind {
	case "ours":
		hello, reply, f.marker = []byte(`{"jsonrpc":"2.0","id":1,"method":"hello"}`), []byte(`"id":1`), []byte(`"topic.message"`)
	case "ourshub":
		hello, reply, f.marker = []byte(`{"jsonrpc":"2.0","id":1,"method":"topic.subscribe","params":{"topic":"t"}}`), []byte(`"id":1`), []byte(`"topic.message"`)
	case "centrifuge":
		hello, reply, f.marker = []byte(`{"id":1,"connect":{}}`+"\n"+`{"id":2,"subscribe":{"channel":"t"}}`), []byte(`"id":2`), []byte(`"pub":`)
		opts.Subprotocols = []string{"centrifuge-json"}
	default:
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	var (
		mu    sync.Mutex
		first error
		next  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				s, err := dial(addr, opts, hello, reply)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil {
					f.subs = append(f.subs, s)
					f.wg.Add(1)
					go f.read(s, kind == "centrifuge")
				}
				mu.Unlock()
			}
		}()
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	if first != nil {
		f.close()
		return nil, first
	}
	return f, nil
}

// dial connects, writes hello and reads until a message holds reply.
func dial(addr string, opts *websocket.DialOptions, hello, reply []byte) (*sub, error) {
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/", opts)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(32 << 20)
	if err := c.Write(ctx, websocket.MessageText, hello); err != nil {
		c.CloseNow()
		return nil, err
	}
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			c.CloseNow()
			return nil, fmt.Errorf("waiting for the subscription: %w", err)
		}
		if bytes.Contains(msg, reply) {
			return &sub{c: c}, nil
		}
	}
}

// read counts what s receives until its connection ends; a centrifuge
// subscriber answers the server's pings (an empty line) with a pong. A
// connection the server ends is a subscriber lost: it no longer counts
// towards a round's end (the first one lost is reported on stderr, with
// the server's close status and reason).
func (f *fleet) read(s *sub, centrifuge bool) {
	defer f.wg.Done()
	var buf bytes.Buffer
	for {
		_, rd, err := s.c.Reader(ctx)
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(rd)
		}
		if err != nil {
			f.gone(s, err)
			return
		}
		msg := buf.Bytes()
		f.wire.Add(int64(len(msg)) + frameHeader(len(msg)))
		f.msgs.Add(1)
		if centrifuge && isPing(msg) {
			if err := s.c.Write(ctx, websocket.MessageText, ping); err != nil {
				f.gone(s, err)
				return
			}
		}
		k := int64(bytes.Count(msg, f.marker))
		if k == 0 {
			continue
		}
		cnt := s.count.Add(k)
		if t := f.target.Load(); t > 0 && cnt >= t && s.reached.Swap(t) != t {
			if f.remaining.Add(-1) == 0 {
				select {
				case f.done <- struct{}{}:
				default:
				}
			}
		}
	}
}

// isPing reports whether a centrifuge message holds a ping: an empty
// object on a line of its own.
func isPing(msg []byte) bool {
	return bytes.Equal(msg, ping) || bytes.HasPrefix(msg, []byte("{}\n")) || bytes.Contains(msg, []byte("\n{}"))
}

var ping = []byte("{}")

// gone counts s lost, unless the child closes its connections or s had
// reached the current target (then it is not awaited this round).
func (f *fleet) gone(s *sub, err error) {
	if f.closing.Load() {
		return
	}
	if f.lost.Add(1) == 1 {
		fmt.Fprintf(os.Stderr, "fanout: a %s subscriber lost: %v (close status %d)\n", f.kind, err, websocket.CloseStatus(err))
	}
	if t := f.target.Load(); t > 0 && s.count.Load() < t && s.reached.Swap(t) != t {
		if f.remaining.Add(-1) == 0 {
			select {
			case f.done <- struct{}{}:
			default:
			}
		}
	}
}
