package cluster

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/peerwire/jsonrpc"
)

// serveCall runs a call from another node on the Peer holding tok here, on
// a goroutine of the node's, and replies with a JSON-RPC response object.
// The call's ctx ends when the caller cancels it or the node closes.
func (n *Node) serveCall(m *nats.Msg, tok string) {
	if m.Reply == "" {
		return
	}
	id := m.Header.Get(hdrCallID)
	method, params, err := unframe(m.Data)
	if err != nil {
		n.reply(m, id, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()})
		return
	}
	n.mu.Lock()
	var p *jsonrpc.Peer
	var name string
	if h := n.names[tok]; h != nil && len(h.regs) > 0 {
		p, name = h.regs[len(h.regs)-1].p, h.name
	}
	switch {
	case p == nil:
		n.mu.Unlock()
		n.replyGone(m)
		return
	case n.serving >= n.maxCalls:
		n.mu.Unlock()
		n.reply(m, id, nil, &jsonrpc.Error{Code: jsonrpc.CodeOverloaded, Message: "cluster: node " + n.id + " is serving too many calls"})
		return
	}
	ctx, cancel := context.WithCancel(n.ctx)
	if id != "" {
		n.calls[id] = cancel
	}
	n.serving++
	n.mu.Unlock()

	n.wg.Go(func() {
		defer func() {
			n.mu.Lock()
			delete(n.calls, id)
			n.serving--
			n.mu.Unlock()
			cancel()
		}()
		var result json.RawMessage
		err := n.callHolder(ctx, p, name, method, params, m.Header, &result)
		if errors.Is(err, jsonrpc.ErrClosed) || n.ctx.Err() != nil { // the Peer or the node has gone
			n.replyGone(m)
			return
		}
		n.reply(m, id, result, err)
	})
}

// callHolder calls method on p, the holder of name, for a call from
// another node whose NATS headers are header: through the node's hook,
// whose ctx the call gets, if it has one.
func (n *Node) callHolder(ctx context.Context, p *jsonrpc.Peer, name, method string, params json.RawMessage, header nats.Header, result *json.RawMessage) error {
	if n.hook == nil {
		return p.Call(ctx, method, paramsArg(params), result)
	}
	ctx, end := n.hook.Start(ctx, OpServe, name, method, header)
	err := p.Call(ctx, method, paramsArg(params), result)
	end(err)
	return err
}

// cancelCall cancels the ctx of the served call id, if it is served here.
func (n *Node) cancelCall(id string) {
	n.mu.Lock()
	cancel := n.calls[id]
	n.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// replyGone tells the caller that the name's holder has left.
func (n *Node) replyGone(m *nats.Msg) {
	r := &nats.Msg{Subject: m.Reply, Header: nats.Header{hdrStatus: {statusGone}}}
	if err := n.nc.PublishMsg(r); err != nil {
		n.log.Debug("cluster: reply not sent", "node", n.id, "err", err)
	}
}

// reply sends a call's outcome: result, or err as an error object (an
// *jsonrpc.Error as it is; any other error as an internal error that says
// what failed). A result over max_payload is replaced by an error saying so.
func (n *Node) reply(m *nats.Msg, id string, result json.RawMessage, err error) {
	resp := response{JSONRPC: "2.0", ID: id, Result: result}
	if err != nil {
		resp.Result = nil
		if !errors.As(err, &resp.Error) {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cluster: call failed on node " + n.id + ": " + err.Error()}
		}
	} else if len(result) == 0 {
		resp.Result = json.RawMessage("null")
	}
	data, merr := json.Marshal(&resp)
	if merr != nil { // invalid JSON in an application's *jsonrpc.Error's data
		e := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cluster: failed to encode the reply"}
		if resp.Error != nil {
			e = &jsonrpc.Error{Code: resp.Error.Code, Message: resp.Error.Message}
		}
		resp.Result, resp.Error = nil, e
		data, _ = json.Marshal(&resp)
	}
	r := &nats.Msg{Subject: m.Reply, Data: data}
	if cerr := checkSize(n.nc, r); cerr != nil {
		resp.Result = nil
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: cerr.Error()}
		r.Data, _ = json.Marshal(&resp)
	}
	if err := n.nc.PublishMsg(r); err != nil {
		n.log.Debug("cluster: reply not sent", "node", n.id, "err", err)
	}
}
