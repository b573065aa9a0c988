package httprpc

import (
	"fmt"
	"time"
)

// enter counts a request being served: the session is not idle meanwhile.
// It reports false once the session has ended.
func (ss *session) enter() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cause != nil {
		return false
	}
	ss.busy++
	return true
}

// markUsed records a call after the one that started the session: it is
// used, and idles for IdleTimeout from now on (see idleTimeout).
func (ss *session) markUsed() {
	ss.mu.Lock()
	ss.used = true
	ss.mu.Unlock()
}

// evictable reports whether ss may make room for a newer session of its
// client: it was never used, and nothing of it is going on (no request
// being served, no stream open, no reply awaited). Called with mu held.
func (ss *session) evictable() bool {
	return !ss.used && ss.busy == 0 && len(ss.byRead) == 0 && len(ss.inbox) == 0 && ss.cause == nil
}

// leave ends what enter counted.
func (ss *session) leave() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.busy--
	ss.active = time.Now()
}

// idleTimeout is how long the session may idle now: IdleTimeout, or
// UnusedTimeout when shorter and no call came after the request that
// started it (notifications, such as MCP's notifications/initialized, and
// GETs do not count). Called with mu held, or before the session is
// shared.
func (ss *session) idleTimeout() time.Duration {
	d := limitOr(ss.srv.IdleTimeout, DefaultIdleTimeout)
	if u := limitOr(ss.srv.UnusedTimeout, DefaultUnusedTimeout); u > 0 && !ss.used && (d <= 0 || u < d) {
		return u
	}
	return d
}

// checkIdle ends the session if it has been idle for its idle timeout, or
// looks again when it could be: it is not idle while a request is served,
// a stream is open, or a request's reply is awaited (a call cancelled in a
// dialect that answers none awaits nothing).
func (ss *session) checkIdle() {
	ss.mu.Lock()
	if ss.cause != nil {
		ss.mu.Unlock()
		return
	}
	d := ss.idleTimeout()
	if d <= 0 { // used now, and IdleTimeout is off
		ss.mu.Unlock()
		return
	}
	if ss.busy > 0 || len(ss.byRead) > 0 || len(ss.inbox) > 0 {
		ss.idle.Reset(d)
		ss.mu.Unlock()
		return
	}
	if left := d - time.Since(ss.active); left > 0 {
		ss.idle.Reset(left)
		ss.mu.Unlock()
		return
	}
	ss.mu.Unlock()
	ss.srv.drop(ss)
	ss.end(fmt.Errorf("%w for %v", ErrSessionIdle, d))
}
