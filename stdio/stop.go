package stdio

import (
	"fmt"
	"io"
	"time"
)

// killWait bounds how long Close waits, after SIGKILL, for the processes of
// the child's group to be gone; the kernel ends them, but a process in an
// uninterruptible sleep only once that ends.
const killWait = time.Second

// maxGroupPoll is the longest pause between two looks at whether the child's
// process group is empty, once the child itself has exited: nothing tells
// the parent when its grandchildren exit.
const maxGroupPoll = 20 * time.Millisecond

// scanEvery is how often, at most, Close looks for the live processes of
// the child's group (groupAlive, which may read /proc) while cheaper looks
// still find the group: it may hold zombies only.
const scanEvery = 200 * time.Millisecond

// closeProcess ends the child as Command describes.
func (c *Conn) closeProcess() error {
	p := c.proc
	p.stdin.Close() // the child reads EOF
	// Interrupt a pending Read without closing the pipe, and keep Read off
	// it from then on, so that what the child still writes can be drained:
	// closing our end now could kill the child with SIGPIPE.
	if p.stdout.SetReadDeadline(time.Now()) == nil {
		c.rmu.Lock()
		defer c.rmu.Unlock()
	}
	drained := p.drain()
	s := p.stop()
	p.stdout.Close() // ends the drain, even if a process that left the group holds the pipe
	<-drained
	return s.err(p.waitErr, p.grace)
}

// drain discards what the child still writes, on a goroutine that ends when
// the child's output ends or is closed, and returns a channel closed when
// it has. Where pipes have no deadlines, a pending Read was not interrupted
// and the pipe is closed instead.
func (p *process) drain() <-chan struct{} {
	drained := make(chan struct{})
	if p.stdout.SetReadDeadline(time.Time{}) != nil {
		p.stdout.Close()
		close(drained)
		return drained
	}
	go func() {
		defer close(drained)
		io.Copy(io.Discard, p.stdout)
	}()
	return drained
}

// stopped records the signals the child itself had to be sent: those sent
// only to what it left behind in its group do not count.
type stopped struct {
	termed, killed bool
}

// stop waits for the child to exit and its process group to empty, asking
// with SIGTERM and then forcing with SIGKILL as Command describes, and
// returns once the child is reaped.
func (p *process) stop() stopped {
	var s stopped
	switch {
	case p.grace < 0:
	case p.waitEnd(p.grace):
		return s
	case hasTerm:
		s.termed = !p.hasExited()
		p.terminate()
		if p.waitEnd(p.grace) {
			return s
		}
	}
	s.killed = !p.hasExited()
	p.kill()
	p.waitEnd(killWait)
	<-p.exited // the child is reaped, whatever waitEnd saw
	return s
}

// waitEnd waits up to d for the child to exit and for its process group to
// empty, and reports whether both happened. A group left with zombies only
// counts as empty: they are dead, and an init that reaps orphans slowly, or
// never, must not make Close signal them.
func (p *process) waitEnd(d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	select {
	case <-p.exited:
	case <-deadline.C:
		return false
	}
	scan := time.Now().Add(scanEvery)
	for poll := time.Millisecond; p.groupExists(); poll = min(2*poll, maxGroupPoll) {
		if time.Now().After(scan) {
			if !p.groupAlive() {
				return true
			}
			scan = time.Now().Add(scanEvery)
		}
		select {
		case <-deadline.C:
			return !p.groupAlive()
		case <-time.After(poll):
		}
	}
	return true
}

// hasExited reports whether the child has exited and been reaped.
func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// err is what Close returns: nil if the child exited with status 0,
// otherwise waitErr, wrapped with what the child had to be sent.
func (s stopped) err(waitErr error, grace time.Duration) error {
	switch {
	case waitErr == nil:
		return nil
	case s.killed && grace < 0:
		return fmt.Errorf("stdio: child process killed at once (negative GracePeriod): %w", waitErr)
	case s.killed && s.termed:
		return fmt.Errorf("stdio: child process did not exit within %v of its stdin closing, nor within %v of SIGTERM, and was killed: %w",
			grace, grace, waitErr)
	case s.killed:
		return fmt.Errorf("stdio: child process did not exit within %v of its stdin closing and was killed: %w", grace, waitErr)
	case s.termed:
		return fmt.Errorf("stdio: child process did not exit within %v of its stdin closing and was sent SIGTERM: %w", grace, waitErr)
	}
	return fmt.Errorf("stdio: child process: %w", waitErr)
}
