package main

import (
	"context"
	"errors"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
)

// CodeNotOnline answers board.nudge for a user with no page open, on any
// node.
const CodeNotOnline = -32014

// Nudge is the params of page.nudge: who nudged the page's user.
type Nudge struct {
	From string `json:"from"`
}

// Nudged is the result of board.nudge: whether the page said it showed
// the nudge.
type Nudged struct {
	Seen bool `json:"seen"`
}

// userName is the cluster-wide name of a page (cluster.Node.Register):
// its user's.
func userName(user string) string { return "user:" + user }

// register gives a page its user's cluster-wide name, on every node, until
// its connection ends, so that board.nudge on any node reaches it.
func (b *Board) register(p *jsonrpc.Peer, user string) {
	if user != "" {
		b.nodes.Register(userName(user), p)
	}
}

// nudge calls page.nudge {from} on one page of the user p.To, on
// whichever node it is connected to (the call crosses NATS when that is
// another node), and returns what the page answered, within callTimeout.
func (b *Board) nudge(ctx context.Context, p struct {
	To string `json:"to"`
}) (Nudged, error) {
	from, ok := userFrom(ctx)
	if !ok {
		return Nudged{}, errNotSignedIn
	}
	to := cleanName(p.To)
	ctx, cancel := b.callCtx(ctx)
	defer cancel()
	var seen bool
	err := b.nodes.Call(ctx, userName(to), "page.nudge", Nudge{From: from}, &seen)
	if errors.Is(err, cluster.ErrUnknownPeer) {
		return Nudged{}, jsonrpc.NewError(CodeNotOnline, "nobody of that name is online", map[string]string{"to": to})
	}
	if err != nil {
		b.log.Info("nudge failed", "to", to, "err", err)
		return Nudged{}, jsonrpc.NewError(jsonrpc.CodeInternalError, "the nudge did not reach a page; try again", nil)
	}
	return Nudged{Seen: seen}, nil
}
