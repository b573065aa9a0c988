package ws

import (
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Close closes the connection with a close handshake: status 1000 (normal
// closure) unless SetCloseStatus chose another. It stops the keepalive and
// waits for a ping in progress. When a write is still blocked 50 ms into
// Close (the other side takes no data), Close drops the connection instead,
// which ends that write. When the other side does not answer the close frame
// within 1 s, Close drops the connection (for a Conn made by NewConn, see
// there). After a message over the limit (refused with status 1009, which
// no handshake can follow), Close drops the connection after a linger: it
// reads and discards what still arrives, until the other side closes, for
// at most 1 s and 16 MiB, so that the close frame is not lost in a reset.
// No goroutine of the Conn outlives Close. Close may be called more than
// once, and concurrently; every call returns once the connection is
// closed.
//
// Close returns nil: a handshake the other side did not complete (it had
// gone, or did not answer) is no failure of this side, and a Peer's Close
// and Shutdown return what Close returns. Why the connection ended is what
// the Peer's Wait reports.
func (c *Conn) Close() error {
	c.mu.Lock()
	code, reason := c.closeCode, c.closeReason
	c.mu.Unlock()
	c.closeWith(code, reason)
	return nil
}

// closeTimeout bounds how long Close waits for the other side to answer its
// close frame before it drops the connection. Whoever is still there answers
// within a round trip; coder/websocket alone would wait 5 s, and a Peer's
// Close with it.
const closeTimeout = time.Second

// closeWith closes the connection with status code, once.
func (c *Conn) closeWith(code websocket.StatusCode, reason string) error {
	var err error
	c.closeOnce.Do(func() {
		c.setEnd(errClosedHere)
		c.mu.Lock()
		c.closed = true
		c.keepalive.stop()
		c.mu.Unlock()
		switch {
		case c.writeStuck():
			// The other side takes no data: a handshake would wait for
			// the stuck write. Drop the connection, which ends the write.
			err = c.ws.CloseNow()
		case c.readBroken.Load():
			// Reading stopped in the middle of a message over the limit,
			// which coder/websocket has answered with close status 1009.
			// No handshake can complete (coder/websocket would first
			// drain the rest of the message, with no deadline, and the
			// other side's answer is lost in it), so the connection is
			// dropped, after a linger that lets the close frame arrive.
			c.linger()
			err = c.ws.CloseNow()
		default:
			err = c.handshake(code, reason)
		}
		c.keepalive.pings.Wait()
		c.markGone(errClosedHere)
	})
	return err
}

// handshake sends the close frame and waits for the answer, for at most
// closeTimeout when the Conn can drop its transport. coder/websocket's
// CloseNow cannot cut short a Close in progress (it waits for it), so the
// transport itself is closed, which fails the handshake's read at once.
func (c *Conn) handshake(code websocket.StatusCode, reason string) error {
	if c.transport == nil {
		return c.ws.Close(code, reason)
	}
	dropped := make(chan struct{})
	timer := time.AfterFunc(closeTimeout, func() {
		c.transport.Close()
		close(dropped)
	})
	err := c.ws.Close(code, reason)
	if timer.Stop() {
		return err
	}
	<-dropped // the timer's goroutine must not outlive Close
	return fmt.Errorf("ws: no close frame from the other side within %v; connection dropped", closeTimeout)
}

// lingerBytes bounds what linger reads and discards, as closeTimeout
// bounds how long it reads.
const lingerBytes = 16 << 20

// linger reads and discards what the other side still sends, until it
// closes, or for closeTimeout, or lingerBytes, whichever comes first, after
// closing the sending half of the transport where it can (a TCP or TLS
// connection): the close frame already written is followed by the end of
// the stream. Closing a socket with input unread makes the kernel reset
// the connection and drop what it has not yet sent, the close frame
// included, so that the other side would never learn why. A Conn made by
// NewConn cannot reach its transport and does not linger.
func (c *Conn) linger() {
	if c.transport == nil {
		return
	}
	if cw, ok := c.transport.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	// A timer, not a deadline: the client's transport (an HTTP response
	// body) has none. Closing it ends the Read below.
	expired := make(chan struct{})
	timer := time.AfterFunc(closeTimeout, func() {
		c.transport.Close()
		close(expired)
	})
	bp := lingerBufs.Get().(*[]byte)
	for n := 0; n < lingerBytes; {
		k, err := c.transport.Read(*bp)
		n += k
		if err != nil {
			break
		}
	}
	lingerBufs.Put(bp)
	if !timer.Stop() {
		<-expired // the timer's goroutine must not outlive Close
	}
}

var lingerBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// writeGrace is how long Close lets a write in progress finish before it
// takes the write for stuck (the other side takes no data): long enough
// for a write that is merely finishing on a healthy connection, which must
// not cost the close frame.
const writeGrace = 50 * time.Millisecond

// writeStuck reports whether a write is still in progress writeGrace after
// it is called.
func (c *Conn) writeStuck() bool {
	c.wmu.Lock()
	if c.writing == 0 {
		c.wmu.Unlock()
		return false
	}
	if c.writesDone == nil {
		c.writesDone = make(chan struct{})
	}
	done := c.writesDone
	c.wmu.Unlock()
	t := time.NewTimer(writeGrace)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
		return true
	}
}

// SetCloseStatus chooses the status and reason Close sends, such as
// websocket.StatusGoingAway when a server shuts down.
func (c *Conn) SetCloseStatus(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	c.closeCode, c.closeReason = code, reason
	c.mu.Unlock()
}
