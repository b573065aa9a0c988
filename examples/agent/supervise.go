package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// Supervision: a tool whose process ends without the host asking (a crash)
// is started again, after a backoff that doubles from minRestart to
// maxRestart. A tool that crashes maxCrashes times within crashWindow is
// given up on: its calls fail at once with errGaveUp, naming the crashes.
//
// What a caller sees: a call in flight when the tool crashes fails with the
// crash as its cause (jsonrpc.ErrClosed wrapping the exit status; it is
// not sent again, since the tool may have done part of it); a call made
// while the tool restarts waits for it, within the call's timeout.
const (
	minRestart  = 50 * time.Millisecond
	maxRestart  = 2 * time.Second
	maxCrashes  = 3
	crashWindow = 10 * time.Second
)

// errGaveUp is wrapped by the calls to a tool that crashed too often.
var errGaveUp = errors.New("tool given up on")

// supervisor keeps one tool running.
type supervisor struct {
	h                 *host
	self, name, token string

	mu       sync.Mutex
	cur      *tool         // the running tool; nil while restarting or given up
	changed  chan struct{} // closed and replaced whenever cur or gaveUp changes
	restarts int
	gaveUp   error
	last     *os.ProcessState // of the last process that ended

	closing   chan struct{}
	closeOnce sync.Once
	done      chan struct{} // closed when run has returned
}

// supervise starts the tool name and keeps it running until close.
func (h *host) supervise(self, name, token string) (*supervisor, error) {
	t, err := h.start(self, name, token)
	if err != nil {
		return nil, err
	}
	s := &supervisor{h: h, self: self, name: name, token: token, cur: t,
		changed: make(chan struct{}), closing: make(chan struct{}), done: make(chan struct{})}
	go s.run(t)
	return s, nil
}

// call calls method on the running tool, waiting for it while it restarts.
func (s *supervisor) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	t, err := s.current(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	err = t.peer.Call(ctx, method, params, result)
	if errors.Is(err, jsonrpc.ErrClosed) && ctx.Err() == nil {
		// The call fails as the Peer ends, a moment before Done is
		// closed: wait for it, so that the next call does not pick t.
		<-t.peer.Done()
		return fmt.Errorf("tool %s crashed during %s: %w", s.name, method, err)
	}
	return err
}

// current returns the running tool, waiting within ctx while it restarts.
func (s *supervisor) current(ctx context.Context) (*tool, error) {
	for {
		s.mu.Lock()
		t, changed, gaveUp := s.cur, s.changed, s.gaveUp
		s.mu.Unlock()
		if gaveUp != nil {
			return nil, gaveUp
		}
		if t != nil {
			select {
			case <-t.peer.Done(): // ended: run is about to take it down
			default:
				return t, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.closing:
			return nil, jsonrpc.ErrClosed
		}
	}
}

// change marks a change of cur or gaveUp. Called with s.mu held.
func (s *supervisor) change() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// run watches the tool t and starts it again when it crashes.
func (s *supervisor) run(t *tool) {
	defer close(s.done)
	var crashes []time.Time
	for {
		select {
		case <-t.peer.Done():
		case <-s.closing:
			return
		}
		st, _ := t.close() // reap it
		s.mu.Lock()
		s.cur, s.last = nil, st
		s.change()
		s.mu.Unlock()
		now := time.Now()
		crashes = append(crashes, now)
		for len(crashes) > 0 && now.Sub(crashes[0]) > crashWindow {
			crashes = crashes[1:]
		}
		if len(crashes) >= maxCrashes {
			s.giveUp(fmt.Errorf("%w: %s crashed %d times within %v (last: exit status %d); not restarting it",
				errGaveUp, s.name, len(crashes), crashWindow, st.ExitCode()))
			return
		}
		wait := minRestart << (len(crashes) - 1)
		wait = min(wait, maxRestart)
		s.h.out.printf("  [supervisor] %s exited with status %d: restarting it in %v\n", s.name, st.ExitCode(), wait)
		select {
		case <-time.After(wait):
		case <-s.closing:
			return
		}
		nt, err := s.h.start(s.self, s.name, s.token)
		if err != nil {
			s.giveUp(fmt.Errorf("%w: restarting %s: %w", errGaveUp, s.name, err))
			return
		}
		s.mu.Lock()
		s.cur, t = nt, nt
		s.restarts++
		s.change()
		s.mu.Unlock()
	}
}

// giveUp stops restarting and fails the calls from now on with err.
func (s *supervisor) giveUp(err error) {
	s.h.out.printf("  [supervisor] %v\n", err)
	s.mu.Lock()
	s.gaveUp = err
	s.change()
	s.mu.Unlock()
}

// close stops supervising and closes the running tool, if any; it returns
// the exit state of the last process.
func (s *supervisor) close() (*os.ProcessState, error) {
	s.closeOnce.Do(func() { close(s.closing) })
	<-s.done
	s.mu.Lock()
	t, last := s.cur, s.last
	s.cur = nil
	s.mu.Unlock()
	if t != nil {
		return t.close()
	}
	return last, nil
}

// running returns the running tool, or nil.
func (s *supervisor) running() *tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// restartCount returns how many times the tool was started again.
func (s *supervisor) restartCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}
