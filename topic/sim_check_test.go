package topic_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// The invariants of a topic simulation run, checked once every goroutine
// waits after each step (and, for order, as the application is called):
//
//  1. Exactly once, in order: after a reset at (E, s), a client's
//     application is handed E's messages s+1, s+2, ... and nothing else
//     (onMessage), each with the data published at its position.
//  2. No silent gap: a client whose connection is up and whose last
//     subscribe of a topic on it succeeded stands where the topic's log
//     stands (same epoch, same seq), or, if the log started a new epoch
//     that has no message yet, still on the old one: it missed nothing,
//     or it was reset.
//  3. Bounded: the Hub holds at most its MaxTopics; once every client has
//     gone and the histories have aged out, it holds no topic and every
//     log it opened is closed.

// check checks invariants 1 and 2 after a step.
func (w *tsimWorld) check() {
	for _, c := range w.clients {
		c.mu.Lock()
		msgs := c.msgs
		c.msgs = nil
		seen := make(map[string]topic.Position, len(c.seen))
		for k, v := range c.seen {
			seen[k] = v
		}
		c.mu.Unlock()
		w.mu.Lock()
		for _, m := range msgs {
			if want, ok := w.published[tsimKey{m.topic, m.pos}]; !ok || want != m.data {
				w.mu.Unlock()
				w.violate("client %d: %s at %s:%d carries %s, published %q", c.id, m.topic, m.pos.Epoch, m.pos.Seq, m.data, want)
				w.mu.Lock()
			}
		}
		w.mu.Unlock()
		w.checkCaughtUp(c, seen)
	}
	max := w.plan.maxTopics
	if max == 0 {
		max = topic.DefaultMaxTopics
	}
	if n := w.hub.Topics(); n > max {
		w.violate("the Hub holds %d topics, over MaxTopics %d", n, max)
	}
}

// checkCaughtUp checks invariant 2 for client c, whose application was
// handed seen.
func (w *tsimWorld) checkCaughtUp(c *tsimClient, seen map[string]topic.Position) {
	if !c.up() {
		w.countEnd(c)
		return
	}
	c.dmu.Lock()
	defer c.dmu.Unlock()
	for name := range c.synced {
		pos, ok := c.f.Position(name)
		if !ok {
			continue
		}
		if seen[name] != pos {
			w.violate("client %d: the Follower is at %s:%d of %s, its application at %s:%d", c.id, pos.Epoch, pos.Seq, name, seen[name].Epoch, seen[name].Seq)
		}
		l := w.store.log(name)
		if l == nil {
			w.violate("client %d follows %s, whose log the Hub has released", c.id, name)
			continue
		}
		at := l.last()
		switch {
		case pos.Epoch == at.Epoch && pos.Seq == at.Seq:
		case pos.Epoch != at.Epoch && at.Seq == 0:
		default:
			w.violate("client %d: %s stands at %s:%d, its log at %s:%d, and nothing says so (a silent gap)", c.id, name, pos.Epoch, pos.Seq, at.Epoch, at.Seq)
		}
	}
}

// countEnd counts why c's connection ended, once.
func (w *tsimWorld) countEnd(c *tsimClient) {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if c.server == nil || c.ended {
		return
	}
	c.ended = true
	select {
	case <-c.server.Done():
		if errors.Is(c.server.Wait(), jsonrpc.ErrSlowConsumer) {
			w.count("dropped as a slow consumer")
		}
	default:
	}
}

// checkReleased checks invariant 3's end: with every client gone, once the
// histories have aged out and the Hub's grace has passed, nothing is held.
func (w *tsimWorld) checkReleased() {
	age := w.plan.maxAge
	if age == 0 {
		age = topic.DefaultMaxAge
	}
	time.Sleep(age + 3*time.Minute)
	w.settle()
	if n, open := w.hub.Topics(), w.store.opened(); n != 0 || open != 0 {
		w.violate("after every client left and %v passed, the Hub holds %d topics, %d logs are open", age+3*time.Minute, n, open)
	}
}

func (w *tsimWorld) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprint(w.stats)
}
