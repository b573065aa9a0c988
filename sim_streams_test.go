package jsonrpc_test

import (
	"fmt"
	"sort"
)

// Invariant 3: every notification reported written is handled exactly
// once, in order, unless the connection ended.

// simStream is the notifications of one stream: sent by one side in
// order, by one goroutine.
type simStream struct {
	written map[int]bool // seq: reported written
	got     map[int]bool
	via     map[int]string // how each was sent, as the receiver saw it
	last    int
}

func (c *simChecker) stream(st int) *simStream {
	s := c.streams[st]
	if s == nil {
		s = &simStream{written: map[int]bool{}, got: map[int]bool{}, via: map[int]string{}, last: -1}
		c.streams[st] = s
	}
	return s
}

// sent records that notification sq of stream st was sent as via says,
// and whether Notify or Batch reported it written.
func (c *simChecker) sent(st, sq int, via string, written bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if written {
		c.stream(st).written[sq] = true
		c.sentVia[[2]int{st, sq}] = via
	}
}

// received records that side s's handler got notification sq of st,
// sent as via says ("notify", "batch", "notes-batch").
func (c *simChecker) received(s, st, sq int, via string, ordered bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	str := c.stream(st)
	switch {
	case str.got[sq]:
		c.failLocked("3 twice", "side %c handled notification %d (%s) of stream %d twice", 'a'+s, sq, via, st)
	case ordered && sq < str.last:
		c.failLocked("3 order", "side %c handled notification %d (%s) of stream %d after %d (%s)",
			'a'+s, sq, via, st, str.last, str.via[str.last])
	}
	str.got[sq] = true
	str.via[sq] = via
	str.last = max(str.last, sq)
}

// missing returns the notifications reported written and not handled,
// and a few of them.
func (c *simChecker) missing() (n int, some []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for st, s := range c.streams {
		for sq := range s.written {
			if !s.got[sq] {
				n++
				if len(some) < 5 {
					some = append(some, fmt.Sprintf("%d/%d (%s)", st, sq, c.sentVia[[2]int{st, sq}]))
				}
			}
		}
	}
	sort.Strings(some)
	return n, some
}
