package main

import "github.com/peerwire/jsonrpc"

// localAudience stands in for the cluster Topic until the cluster module
// is merged: it reaches this node's pages only.
type localAudience struct{ jsonrpc.Group }

func (a *localAudience) Notify(method string, params any) error {
	return a.Group.Notify(method, params)
}
