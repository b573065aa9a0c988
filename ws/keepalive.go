package ws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peerwire/jsonrpc"
)

// The keepalive, and what it can tell. coder/websocket handles control
// frames only inside a Read: while nobody reads the Conn, which is how a
// Peer pushes back on a remote side that sends notifications faster than
// its handlers take them, pongs and close frames wait unseen behind the
// unread input. So what a missing pong says depends on the reading:
//
//   - A ping sent while a Read was in progress, with that same Read in
//     progress and nothing arriving until its pong is overdue: the other
//     side is gone, or the connection is half-open (ErrKeepalive).
//   - Any other missing pong proves nothing: it may sit unread. The other
//     side may well be alive and reading; it is never dropped for that.
//
// What arrives is the other side's data, and also its pings and pongs,
// which coder/websocket reports to the callbacks that listen installs: a
// ping is as good a sign of life as a message. That is how a Conn that is
// read keeps a remote side that pushes back: that side reads nothing, so it
// answers no ping, but it pings (see below).
//
// While the Conn is not being read the keepalive probes by writing
// instead: a ping at least every probeEvery (PingInterval, at most 1 s).
// After the other side closes, the next write or the one after fails (the
// first draws a reset); a write that fails, or that cannot be made within
// PingTimeout (coder/websocket gives a control frame at most 5 s), means
// the other side has gone (ErrKeepalive). The keepalive then records the
// cause, drops the transport and closes Gone, so that the Peer, which waits
// on Gone while it pushes back, calls Read and gets the cause at once. A
// ping that waited in vain for a write in progress to let it go out, on a
// Conn that was read all along while something arrived, proves nothing
// either: the other side is there and pushes back, and takes no data until
// it reads again (what bounds that is the Peer's WriteTimeout).
//
// A ping from the other side is not answered while a write of this side's
// is stuck (still in progress writeGrace after the ping came): the pong
// would wait for that write, and coder/websocket fails the Read after 5 s
// of waiting to write a pong. A side that takes no data reads no pong.
// What this cannot prevent: coder/websocket closes the connection when a
// ping or pong starts to be written and cannot finish within its ctx (as
// when it comes just after a write that filled the socket's buffers: this
// layer cannot see their room), or gets the write lock in the instant its
// ctx ends.
//
// One timer per Conn runs tick, on its own goroutine; no goroutine waits
// for it. An idle connection (one Read in progress, nothing arriving) is on
// the slow schedule, one tick per PingInterval; any other is ticked every
// probeEvery, and a Read that returns puts the timer back on that schedule.
// A tick that pings runs the ping itself, so the pings in progress are at
// most about PingTimeout/probeEvery + 1 (they wait for their pongs).

// keepalive is a Conn's keepalive state.
type keepalive struct {
	interval   time.Duration // PingInterval; 0 for no keepalive
	timeout    time.Duration // PingTimeout
	probeEvery time.Duration // how often to ping while nobody reads
	maxPings   int           // pings in progress at most
	pings      sync.WaitGroup
	slow       atomic.Bool // the timer is on the idle schedule

	// Under the Conn's mu.
	timer    *time.Timer
	inFlight int       // pings in progress
	last     time.Time // when the last ping started
	seen     uint64    // readState at the last tick
	due      time.Time // when the timer fires next
}

// probeEvery bounds how often the keepalive pings while nobody reads.
const probeEvery = time.Second

// startKeepalive starts the keepalive, unless interval turns it off.
func (c *Conn) startKeepalive(interval, timeout time.Duration) {
	if interval <= 0 {
		return
	}
	k := &c.keepalive
	k.interval, k.timeout = interval, timeout
	k.probeEvery = min(interval, probeEvery)
	k.maxPings = int(timeout/k.probeEvery) + 2
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	k.last = now
	k.due = now.Add(k.probeEvery)
	k.timer = time.AfterFunc(k.probeEvery, c.tick)
}

// stop stops the timer. Called with the Conn's mu held.
func (k *keepalive) stop() {
	if k.timer != nil {
		k.timer.Stop()
	}
}

// tick pings when a ping is due (every PingInterval while a Read is in
// progress, every probeEvery while none is), schedules the next tick, and
// runs the ping.
func (c *Conn) tick() {
	k := &c.keepalive
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	now := time.Now()
	st := c.readState.Load()
	reading := st&1 == 1
	every := k.interval
	if !reading {
		every = k.probeEvery
	}
	ping := now.Sub(k.last) >= every && k.inFlight < k.maxPings
	if ping {
		k.last = now
		k.inFlight++
		k.pings.Add(1) // before Close's Wait: Close sets closed first
	}
	idle := reading && st == k.seen
	k.seen = st
	next := k.probeEvery
	if idle {
		next = k.last.Add(k.interval).Sub(now)
		if next <= 0 { // a ping was due, but too many are in progress
			next = k.probeEvery
		}
	}
	k.slow.Store(idle)
	k.due = now.Add(next)
	k.timer.Reset(next)
	c.mu.Unlock()
	if ping {
		c.ping(st)
	}
}

// readReturned puts the timer back on the quick schedule after a Read
// returns a message: the Peer may now stop reading for a while.
func (c *Conn) readReturned() {
	k := &c.keepalive
	if !k.slow.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || !k.slow.Load() {
		return
	}
	k.slow.Store(false)
	if time.Until(k.due) > k.probeEvery {
		k.due = time.Now().Add(k.probeEvery)
		k.timer.Reset(k.probeEvery)
	}
}

// ping sends one ping and waits for its pong, for PingTimeout, and judges
// the outcome (see the top of this file); st is readState when it started.
func (c *Conn) ping(st uint64) {
	k := &c.keepalive
	defer k.pings.Done()
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	err := c.ws.Ping(ctx)
	cancel()
	c.mu.Lock()
	k.inFlight--
	closed := c.closed
	c.mu.Unlock()
	if err == nil || closed || errors.Is(err, net.ErrClosed) {
		return // answered, or closed by someone who knows why
	}
	read, heard := st&1 == 1, c.readState.Load() != st
	var cause error
	switch {
	case pongMissed(err):
		if !read || heard {
			return // not read all along, or something came: the pong may sit unread
		}
		cause = fmt.Errorf("%w: no pong within %v: %w", ErrKeepalive, k.timeout, err)
	case read && heard && lockMissed(err):
		return // a write of ours holds the line, but the other side is there: it pushes back
	default:
		cause = fmt.Errorf("%w: a ping could not be written: %w", ErrKeepalive, err)
	}
	c.fail(cause)
	c.ws.CloseNow() // before Gone is closed: a Read after it must fail at once
	c.markGone(cause)
}

// listen sets the ping and pong callbacks of the options coder/websocket
// makes a connection with, so that the keepalive hears the other side's
// pings and pongs (see the top of this file). A callback already set there
// is called too, after the keepalive has heard; a pong goes out if it says
// so and no write of this side's is stuck.
func (c *Conn) listen(onPing *func(context.Context, []byte) bool, onPong *func(context.Context, []byte)) {
	ping, pong := *onPing, *onPong
	*onPing = func(ctx context.Context, payload []byte) bool {
		c.heard()
		if ping != nil && !ping(ctx, payload) {
			return false
		}
		return !c.writeStuck()
	}
	*onPong = func(ctx context.Context, payload []byte) {
		c.heard()
		if pong != nil {
			pong(ctx, payload)
		}
	}
}

// heard records that something came from the other side.
func (c *Conn) heard() { c.readState.Add(2) }

// pongMissed reports whether a failed Ping was written and then got no pong
// in time, rather than failing to be written. coder/websocket (v1.8.15)
// tells the two apart only in its error's text.
func pongMissed(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && strings.Contains(err.Error(), "failed to wait for pong")
}

// lockMissed reports whether a failed Ping was never written because
// another write held the connection until the ping's time was up. A ping
// that starts to be written and cannot finish in time is another matter:
// coder/websocket then closes the connection.
func lockMissed(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && strings.Contains(err.Error(), "failed to acquire lock")
}

var _ jsonrpc.Watcher = (*Conn)(nil)

// Gone returns a channel that is closed once the connection has ended: the
// keepalive found the other side gone, a Read failed, or Close closed it.
// From then on Read fails at once, with the cause. It implements
// jsonrpc.Watcher: a Peer that pushes back (does not read) waits on it, and
// the keepalive, which probes by writing while nobody reads, closes it
// within the bound that Options states when the other side closes or
// resets the connection.
func (c *Conn) Gone() <-chan struct{} { return c.gone }

// GoneErr returns why Gone was closed (the keepalive's finding, a failed
// read or write), an error wrapping io.EOF for a clean end, or nil while
// the connection lasts.
func (c *Conn) GoneErr() error {
	select {
	case <-c.gone:
	default:
		return nil
	}
	if err := c.endCause(); err != nil {
		return err
	}
	return fmt.Errorf("ws: connection closed: %w", io.EOF)
}
