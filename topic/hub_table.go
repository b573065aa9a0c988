package topic

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/peerwire/jsonrpc"
)

// The Hub's table of open topics: each is opened on first use (Publish or
// a subscribe), counts the operations using it (refs) and the connections
// following it (subs), and once neither holds it joins h.quiet, a list in
// the order topics became quiet. A topic quiet for quietGrace whose log is
// idle (Log.Idle: nothing a client could recover) is released, its log
// closed; one whose log still holds history is looked at again a
// quietGrace later. One timer per Hub (h.sweeper, armed only while some
// topic is quiet) does this, so that what connections opened is freed
// when nothing else happens. When MaxTopics is reached, an open that
// needs room releases, grace or not, the idle topics among the few that
// became quiet last (a client that opened topics and left) and the few at
// a cursor that walks the quiet list, one step per such open (sweepAtMax):
// a bounded cost per open, however many topics are quiet and however
// often opens are refused, under the lock every topic's use needs (it
// looked at every quiet topic before each refusal: 2,000 Idle calls a
// refused subscribe with MaxTopics 2,000). The grace lets a client that
// drops and comes back within it find its topic, and its epoch, as it
// left them.

// hubTopic is one topic of a Hub: its log, once open, and its subscribers.
type hubTopic struct {
	name  string
	ready chan struct{} // closed once log or err is set
	log   Log
	err   error
	group jsonrpc.Group
	hook  Hook          // Hub.Hook, when the topic was opened
	refs  int           // operations using the topic now (h.mu)
	subs  int           // connections following it, or subscribing (h.mu)
	quiet *list.Element // in h.quiet while nobody holds it (h.mu)
	since time.Time     // when it became quiet, or was last looked at
}

// quietGrace is how long a topic nobody holds is kept at least.
const quietGrace = time.Minute

// acquire returns the topic called name, opening its log on first use,
// with one more ref: the caller releases it.
func (h *Hub) acquire(ctx context.Context, name string) (*hubTopic, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	t := h.topics[name]
	if t != nil {
		t.refs++
		h.unquiet(t)
		h.mu.Unlock()
		select {
		case <-t.ready:
		case <-ctx.Done():
			h.release(t)
			return nil, ctx.Err()
		}
		if t.err != nil {
			h.release(t)
			return nil, t.err
		}
		return t, nil
	}
	var done []Log
	if max := bound(h.MaxTopics, DefaultMaxTopics); max >= 0 && len(h.topics) >= max {
		h.sweepAtMax(&done)
		if len(h.topics) >= max {
			h.mu.Unlock()
			closeLogs(done)
			return nil, fmt.Errorf("topic: cannot open %.40q: %w (Hub.MaxTopics is %d)", name, ErrTooManyTopics, max)
		}
	}
	t = &hubTopic{name: name, ready: make(chan struct{}), refs: 1, hook: h.Hook}
	t.group.MaxQueue = h.MaxQueue
	if h.topics == nil {
		h.topics = make(map[string]*hubTopic)
	}
	h.topics[name] = t
	st := h.Store
	if st == nil {
		st = &h.mem
	}
	h.mu.Unlock()
	closeLogs(done)
	t.log, t.err = t.open(ctx, st)
	if t.err != nil {
		t.err = fmt.Errorf("topic: failed to open %q: %w", name, t.err)
		h.mu.Lock()
		if h.topics[name] == t {
			delete(h.topics, name) // the next use tries again
		}
		h.mu.Unlock()
		close(t.ready)
		h.release(t)
		return nil, t.err
	}
	close(t.ready)
	return t, nil
}

// release gives back a ref that acquire took.
func (h *Hub) release(t *hubTopic) {
	h.mu.Lock()
	t.refs--
	h.settle(t)
	h.mu.Unlock()
}

// settle files t as quiet if nobody holds it. h.mu held.
func (h *Hub) settle(t *hubTopic) {
	if t.refs > 0 || t.subs > 0 || t.quiet != nil || h.topics[t.name] != t || t.log == nil {
		return
	}
	if h.quiet == nil {
		h.quiet = list.New()
	}
	t.since = time.Now()
	t.quiet = h.quiet.PushBack(t)
	if h.quiet.Len() == 1 {
		h.arm(quietGrace)
	}
}

// unquiet takes t out of h.quiet: someone holds it again. h.mu held.
func (h *Hub) unquiet(t *hubTopic) {
	if t.quiet != nil {
		if h.cursor == t.quiet {
			h.cursor = t.quiet.Next()
		}
		h.quiet.Remove(t.quiet)
		t.quiet = nil
	}
}

// arm sets the sweeper to run in d. h.mu held.
func (h *Hub) arm(d time.Duration) {
	if h.sweeper == nil {
		h.sweeper = time.AfterFunc(d, h.sweepQuiet)
	} else {
		h.sweeper.Reset(d)
	}
}

// sweepQuiet runs on the sweeper's timer: it releases the topics quiet
// for quietGrace with an idle log, and arms the timer for the next.
func (h *Hub) sweepQuiet() {
	var done []Log
	h.mu.Lock()
	if !h.closed {
		h.sweep(time.Now().Add(-quietGrace), &done)
		if h.quiet.Len() > 0 {
			next := h.quiet.Front().Value.(*hubTopic).since
			h.arm(max(time.Until(next.Add(quietGrace)), 0) + time.Millisecond)
		}
	}
	h.mu.Unlock()
	closeLogs(done)
}

// atMaxLook is how many quiet topics sweepAtMax looks at, at each end.
const atMaxLook = 8

// sweepAtMax releases, when MaxTopics is reached, the idle topics among
// the atMaxLook that became quiet last and the atMaxLook at h.cursor,
// which it moves on (back to the front past the end), adding their logs to
// done. h.mu held.
func (h *Hub) sweepAtMax(done *[]Log) {
	if h.quiet == nil {
		return
	}
	e := h.quiet.Back()
	for i := 0; e != nil && i < atMaxLook; i++ {
		prev := e.Prev()
		h.releaseIdle(e.Value.(*hubTopic), done)
		e = prev
	}
	for i := 0; i < atMaxLook && h.quiet.Len() > 0; i++ {
		if h.cursor == nil {
			h.cursor = h.quiet.Front()
		}
		e := h.cursor
		h.cursor = e.Next()
		h.releaseIdle(e.Value.(*hubTopic), done)
	}
}

// releaseIdle releases the quiet topic t if its log is idle. h.mu held.
func (h *Hub) releaseIdle(t *hubTopic, done *[]Log) {
	if t.log.Idle() {
		h.unquiet(t)
		delete(h.topics, t.name)
		*done = append(*done, t.log)
	}
}

// sweep releases the quiet topics that became quiet (or were looked at)
// before cutoff whose log is idle,
// adding their logs to done (to close after h.mu); those whose log still
// holds history go to the back, to be looked at again later. h.mu held.
func (h *Hub) sweep(cutoff time.Time, done *[]Log) {
	if h.quiet == nil {
		return
	}
	now := time.Now()
	for n := h.quiet.Len(); n > 0; n-- {
		t := h.quiet.Front().Value.(*hubTopic)
		if t.since.After(cutoff) {
			return
		}
		h.unquiet(t)
		if t.log.Idle() {
			delete(h.topics, t.name)
			*done = append(*done, t.log)
			continue
		}
		t.since = now
		t.quiet = h.quiet.PushBack(t)
	}
}

func closeLogs(logs []Log) {
	for _, l := range logs {
		if l != nil {
			l.Close()
		}
	}
}

// open opens the topic's log in st: with the deliveries' context when
// the topic has a hook and st can give it.
func (t *hubTopic) open(ctx context.Context, st Store) (Log, error) {
	if t.hook == nil {
		return st.Open(ctx, t.name, t.deliver)
	}
	if cs, ok := st.(ContextStore); ok {
		return cs.OpenContext(ctx, t.name, t.deliverCtx)
	}
	return st.Open(ctx, t.name, func(pos Position, data json.RawMessage) {
		t.deliverCtx(context.Background(), pos, data)
	})
}

// deliver sends one message of the topic's log to its subscribers.
func (t *hubTopic) deliver(pos Position, data json.RawMessage) {
	// Group.Notify fails only if the params cannot be marshalled, and
	// these are a string, numbers and JSON the log was given.
	_ = t.group.Notify(MethodMessage, Message{Topic: t.name, Epoch: pos.Epoch, Seq: pos.Seq, Data: data})
}

// deliverCtx is deliver through the topic's hook: the params are
// marshalled once, and the hook may add to them (its trace context).
func (t *hubTopic) deliverCtx(ctx context.Context, pos Position, data json.RawMessage) {
	params, err := json.Marshal(Message{Topic: t.name, Epoch: pos.Epoch, Seq: pos.Seq, Data: data})
	if err != nil {
		return // a string, numbers and JSON the log was given: it cannot fail
	}
	params, done := t.hook.Deliver(ctx, t.name, pos, params)
	_ = t.group.Notify(MethodMessage, json.RawMessage(params))
	done()
}
