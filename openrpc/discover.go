package openrpc

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/peerwire/jsonrpc"
)

// Serve makes m serve rpc.discover: its result is m's document (New),
// made once and again only when m has changed (Mux.Generation), so that
// methods added later are in it and a request costs no more than its
// reply's bytes (TestReviewDiscoverCostPerCall). A method added after
// Serve whose types have no JSON form is described as untyped, with
// x-undescribable, rather than failing every rpc.discover
// (TestReviewDiscoverSurvivesLateRegister). A Mux serves rpc.discover
// only through Serve (jsonrpc.Mux.HandleDiscover): describing a server to
// whoever asks is the user's choice. Serve panics as HandleDiscover does,
// and if New(m, info) fails now.
func Serve(m *jsonrpc.Mux, info Info) {
	d := &discover{m: m, info: info}
	gen := m.Generation()
	doc, err := New(m, info)
	if err != nil {
		panic(err)
	}
	if err := d.keep(doc, gen); err != nil {
		panic(err)
	}
	m.HandleDiscover(d)
}

// discover serves rpc.discover from the document it made last.
type discover struct {
	m    *jsonrpc.Mux
	info Info

	mu   sync.Mutex // held while the document is made: one at a time
	gen  uint64     // the Mux's generation the document describes
	text json.RawMessage
}

// keep stores doc, made of the Mux at generation gen, as its text.
func (d *discover) keep(doc Document, gen uint64) error {
	text, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	d.text, d.gen = text, gen
	return nil
}

// ServeRPC returns the document, made again if the Mux has changed.
func (d *discover) ServeRPC(context.Context, *jsonrpc.Request) (any, error) {
	gen := d.m.Generation() // read first: a change made while building makes the next call build again
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen != gen {
		doc, err := build(d.m, d.info, true)
		if err == nil {
			err = d.keep(doc, gen)
		}
		if err != nil {
			return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, "cannot describe the server", nil)
		}
	}
	return d.text, nil
}
