package topic

import (
	"context"

	"github.com/peerwire/jsonrpc"
)

// The budget of a connection's subscribe replies. A reply is built (its
// messages encoded) once its handler returns, and then waits for room in
// the Peer's outbound queue, held by its handler's slot and counted in no
// budget until it is queued (where Options.MaxOutboundBytes counts it). A
// reply carries at least one message whatever its size, so a connection
// that sends subscribes and reads nothing could make the Hub build as many
// replies as it has handlers (64 by default), each as large as the largest
// message in the history. Each reply is therefore counted, at the size of
// the buffer it will be built in, against its connection's
// Hub.MaxConnReplyBytes before it is built, until jsonrpc.AfterReply says
// it has left the handler; a subscribe that finds no room waits for it,
// and a reply larger than the whole budget goes alone.

// replyBudget is what a connection's subscribe replies hold (h.mu).
type replyBudget struct {
	replyBytes int           // counted: built, or about to be, and not yet queued
	replyRoom  chan struct{} // closed when replyBytes drop; nil until someone waits
}

// replyCost is what a subscribe reply of name carrying hist is counted at:
// twice its encoded size, the most an append-grown buffer can reach.
func replyCost(name string, hist History) int {
	n := 128 + 2*len(name) + len(hist.Last.Epoch) // the envelope, the id, escapes
	for _, e := range hist.Messages {
		n += 32 + len(e.Data) // {"seq":...,"data":...},
	}
	return 2 * n
}

// reserve counts n bytes of a subscribe reply against peer's budget,
// waiting for room until ctx ends, and arranges for them to be given back
// once the reply has left the handler. A nil peer (a handler called
// outside a Peer) counts nothing.
func (h *Hub) reserve(ctx context.Context, peer *jsonrpc.Peer, n int) error {
	max := bound(h.MaxConnReplyBytes, DefaultMaxConnReplyBytes)
	if peer == nil || max < 0 {
		return nil
	}
	h.mu.Lock()
	var c *hubConn
	for {
		c = h.conns[peer]
		if h.closed || c == nil { // the Hub closed, or the connection ended
			h.mu.Unlock()
			return errHubClosed
		}
		if c.replyBytes == 0 || c.replyBytes+n <= max {
			break
		}
		if c.replyRoom == nil {
			c.replyRoom = make(chan struct{})
		}
		room := c.replyRoom
		h.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
		h.mu.Lock()
	}
	c.replyBytes += n
	h.mu.Unlock()
	give := func() {
		h.mu.Lock()
		c.replyBytes -= n
		if c.replyRoom != nil {
			close(c.replyRoom)
			c.replyRoom = nil
		}
		h.mu.Unlock()
	}
	if !jsonrpc.AfterReply(ctx, give) {
		give() // no reply to wait for (a notification)
	}
	return nil
}
