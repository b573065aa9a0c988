// Package layerctx lays the values of one context over those of another,
// for the servers of ws and httprpc: a Peer's handlers see the values of
// the request that opened their connection (what authentication
// middleware put there) over those of jsonrpc.Options.BaseContext (what
// the application puts under every connection of every transport: a
// logger, a database handle), as net/http's request contexts derive from
// http.Server.BaseContext.
package layerctx

import "context"

// Over returns a context that carries top's values and, for a key top has
// no value for, under's; it carries neither's deadline nor cancellation (a
// Peer keeps only its base context's values). A nil under gives top's
// values alone.
func Over(top, under context.Context) context.Context {
	top = context.WithoutCancel(top)
	if under == nil {
		return top
	}
	return layered{Context: top, under: under}
}

// layered is top (embedded) with under's values beneath its own.
type layered struct {
	context.Context
	under context.Context
}

func (l layered) Value(key any) any {
	if v := l.Context.Value(key); v != nil {
		return v
	}
	return l.under.Value(key)
}
