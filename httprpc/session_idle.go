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

// leave ends what enter counted.
func (ss *session) leave() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.busy--
	ss.active = time.Now()
}

// checkIdle ends the session if it has been idle for IdleTimeout, or
// looks again when it could be: it is not idle while a request is served,
// a stream is open, or a request's reply is awaited.
func (ss *session) checkIdle() {
	d := limitOr(ss.srv.IdleTimeout, DefaultIdleTimeout)
	ss.mu.Lock()
	if ss.cause != nil {
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
