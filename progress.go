package jsonrpc

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
)

// A ProgressDialect is how a protocol built on JSON-RPC reports the
// progress of a call: the caller puts a token in the request's params, and
// the side serving it sends notifications named Method that carry the
// token and a value. The specification defines none; see Options.Progress,
// WithProgress and ReportProgress.
//
// A protocol may have two kinds of progress, each with a token of its own:
// work-done progress (LSP's workDoneToken, MCP's progressToken) and
// partial results (LSP's partialResultToken). A dialect without partial
// results ignores that token.
type ProgressDialect struct {
	// Method is the progress notification's method.
	Method string
	// Inject returns params, a JSON object (or nil for none), with the
	// tokens put where the protocol wants them: work for work-done
	// progress, partial for partial results; the zero ID for a kind the
	// caller did not ask for.
	Inject func(params json.RawMessage, work, partial ID) (json.RawMessage, error)
	// Tokens returns the tokens that a request's params carry (the zero
	// ID for each that is absent).
	Tokens func(params json.RawMessage) (work, partial ID)
	// Params returns the params of the progress notification that reports
	// value (a JSON value) for token.
	Params func(token ID, value json.RawMessage) json.RawMessage
	// Parse returns the token and the value of a progress notification's
	// params, and false if they name no token.
	Parse func(params json.RawMessage) (token ID, value json.RawMessage, ok bool)
	// Create, if set, is the method of the call that creates a token the
	// caller did not give (LSP's window/workDoneProgress/create, its
	// params {"token": token}): see StartProgress.
	Create string
}

// LSPProgress is the Language Server Protocol's dialect: "workDoneToken"
// and "partialResultToken" in a request's params, "$/progress" with params
// {"token": token, "value": value}, and "window/workDoneProgress/create"
// for progress the server starts by itself. A function given to
// WithProgress receives each value (a WorkDoneProgressBegin, Report or
// End), one given to WithPartialResults each partial result.
var LSPProgress = &ProgressDialect{
	Method: "$/progress",
	Inject: func(params json.RawMessage, work, partial ID) (json.RawMessage, error) {
		var err error
		if !work.IsZero() {
			params, err = setMember(params, "workDoneToken", []byte(work.raw))
		}
		if err == nil && !partial.IsZero() {
			params, err = setMember(params, "partialResultToken", []byte(partial.raw))
		}
		return params, err
	},
	Tokens: func(params json.RawMessage) (work, partial ID) {
		work, _ = idMember(params, "workDoneToken")
		partial, _ = idMember(params, "partialResultToken")
		return work, partial
	},
	Params: func(token ID, value json.RawMessage) json.RawMessage {
		b := make([]byte, 0, len(token.raw)+len(value)+20)
		b = append(append(append(b, `{"token":`...), token.raw...), `,"value":`...)
		return append(append(b, value...), '}')
	},
	Parse: func(params json.RawMessage) (ID, json.RawMessage, bool) {
		token, ok := idMember(params, "token")
		if !ok {
			return ID{}, nil, false
		}
		return token, objMember(params, "value"), true
	},
	Create: "window/workDoneProgress/create",
}

// MCPProgress is the Model Context Protocol's dialect: "_meta":
// {"progressToken": token} in a request's params, and
// "notifications/progress" with params {"progressToken": token,
// "progress": n, "total": n, "message": s}. A function given to
// WithProgress receives those params whole; ReportProgress takes a value
// such as {"progress": 1, "total": 3, "message": "..."} and adds the
// token. MCP has no partial results.
var MCPProgress = &ProgressDialect{
	Method: "notifications/progress",
	Inject: func(params json.RawMessage, work, _ ID) (json.RawMessage, error) {
		if work.IsZero() {
			return params, nil
		}
		meta, err := setMember(objMember(params, "_meta"), "progressToken", []byte(work.raw))
		if err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
		return setMember(params, "_meta", meta)
	},
	Tokens: func(params json.RawMessage) (work, partial ID) {
		work, _ = idMember(objMember(params, "_meta"), "progressToken")
		return work, ID{}
	},
	Params: func(token ID, value json.RawMessage) json.RawMessage {
		p, err := setMember(value, "progressToken", []byte(token.raw))
		if err != nil { // a value that is no object: report it as the message
			p, _ = setMember(nil, "progressToken", []byte(token.raw))
			p, _ = setMember(p, "message", value)
		}
		return p
	},
	Parse: func(params json.RawMessage) (ID, json.RawMessage, bool) {
		token, ok := idMember(params, "progressToken")
		return token, params, ok
	},
}

// objMember returns the raw value of member name of a JSON object, or nil.
func objMember(obj json.RawMessage, name string) json.RawMessage {
	obj = trimSpace(obj)
	if len(obj) == 0 || obj[0] != '{' {
		return nil
	}
	var v json.RawMessage
	forEachMember(obj, func(key, val []byte) {
		if string(key) == name {
			v = val
		}
	})
	return v
}

// setMember returns obj, a JSON object (nil or null for an empty one),
// with member name set to val, replacing a member of that name. It fails
// for anything but an object.
func setMember(obj json.RawMessage, name string, val []byte) (json.RawMessage, error) {
	obj = trimSpace(obj)
	if len(obj) == 0 || string(obj) == "null" {
		obj = json.RawMessage("{}")
	}
	if obj[0] != '{' {
		return nil, fmt.Errorf("%w: a call with progress needs params that are a JSON object (or nil), got %.20s", ErrInvalidParams, obj)
	}
	out := make([]byte, 0, len(obj)+len(name)+len(val)+4)
	out = append(out, '{')
	forEachMember(obj, func(key, v []byte) {
		if string(key) == name {
			return
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(appendQuote(out, string(key)), ':')
		out = append(out, v...)
	})
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(appendQuote(out, name), ':')
	out = append(out, val...)
	return append(out, '}'), nil
}

// progressKey is the ctx key of a caller's progress functions.
type progressKey struct{}

// progressFuncs are the functions a caller's ctx gives its calls.
type progressFuncs struct {
	work, partial func(value json.RawMessage)
}

// WithProgress returns a ctx that asks every Call made with it (or a ctx
// derived from it) for work-done progress in Options.Progress's dialect:
// the Peer makes a token for each call (unique to this Peer, even against
// another Peer of this package, and unguessable, so that a remote side
// cannot aim progress at another call), puts it in the call's params, and
// runs f with the value of every progress notification for that token
// that arrives before the reply, in arrival order, on the calling
// goroutine, before Call returns. Progress that arrives after the reply is
// dropped. Without a dialect, f is never called.
//
// f may call the other side (the read loop goes on routing replies while
// it runs), but the reply waits for it: keep it short. A call's progress
// waiting for f is bounded in bytes (see Options.Progress); past the
// bound the call fails with an error wrapping ErrOverloaded.
//
// Params must then be a JSON object or nil (an empty object is sent):
// a Call with array params fails at once with an error wrapping
// ErrInvalidParams. On a Peer with no Options.Progress the Call fails at
// once with ErrNoProgressDialect, since f would never be called. Batch
// ignores f.
func WithProgress(ctx context.Context, f func(value json.RawMessage)) context.Context {
	fs, _ := ctx.Value(progressKey{}).(progressFuncs)
	fs.work = f
	return context.WithValue(ctx, progressKey{}, fs)
}

// WithPartialResults is WithProgress for partial results (LSP's
// partialResultToken): f receives each partial result, in arrival order,
// before Call returns. In a dialect without partial results it is never
// called.
func WithPartialResults(ctx context.Context, f func(value json.RawMessage)) context.Context {
	fs, _ := ctx.Value(progressKey{}).(progressFuncs)
	fs.partial = f
	return context.WithValue(ctx, progressKey{}, fs)
}

// progressOf returns the progress functions ctx asks for, and whether it
// asks for any.
func (p *Peer) progressOf(ctx context.Context) (progressFuncs, bool) {
	fs, _ := ctx.Value(progressKey{}).(progressFuncs)
	return fs, fs.work != nil || fs.partial != nil
}

// newToken returns a progress token that no other Peer's is, and that a
// remote side cannot guess: the Peer's own prefix and 80 random bits.
func (p *Peer) newToken() ID {
	return ID{raw: p.pending.tokPrefix + rand.Text()[:16] + `"`}
}

// newTokenPrefix returns the beginning of every token a Peer makes (the
// opening quote, "peerwire-", 50 random bits and a dash), so that progress
// for one of its tokens that is no longer awaited is told from progress
// for a token the other side made (see routeProgress), even when the other
// side is a Peer of this package too.
func newTokenPrefix() string { return `"peerwire-` + rand.Text()[:10] + "-" }

// ownToken reports whether token is one this table's Peer made.
func (t *pendingTable) ownToken(token ID) bool {
	return t.tokPrefix != "" && strings.HasPrefix(token.raw, t.tokPrefix)
}

// startedKey is the ctx key of a token that StartProgress created.
type startedKey struct{}

// ReportProgress reports value (marshalled with encoding/json) as the
// work-done progress of the request that the handler whose ctx this is
// serves, in Options.Progress's dialect: a notification carrying the
// caller's token, written before the handler's reply. It returns nil and
// sends nothing when the caller gave no token, the Peer has no dialect, or
// ctx is not a handler's (unless StartProgress gave it a token). It
// returns once the notification is written, or fails as Notify does.
func ReportProgress(ctx context.Context, value any) error {
	return report(ctx, value, false)
}

// ReportPartialResult is ReportProgress for a partial result (LSP's
// partialResultToken): value is one part of the result, which the caller
// receives before the reply. A no-op when the caller gave no
// partialResultToken.
func ReportPartialResult(ctx context.Context, value any) error {
	return report(ctx, value, true)
}

func report(ctx context.Context, value any, partial bool) error {
	p := PeerFromContext(ctx)
	if p == nil || p.opts.Progress == nil {
		return nil
	}
	token := p.tokenOf(ctx, partial)
	if token.IsZero() {
		return nil
	}
	raw, err := marshalJSON(value)
	if err != nil {
		return fmt.Errorf("jsonrpc: failed to marshal progress: %w", err)
	}
	d := p.opts.Progress
	return p.Notify(ctx, d.Method, d.Params(token, raw))
}

// tokenOf returns the token that ctx reports progress of one kind for.
func (p *Peer) tokenOf(ctx context.Context, partial bool) ID {
	if t, ok := ctx.Value(startedKey{}).(ID); ok && !partial {
		return t
	}
	h := p.inbound.handlerOf(ctx)
	if h == nil || h.req == nil {
		return ID{}
	}
	work, part := p.opts.Progress.Tokens(h.req.Params)
	if partial {
		return part
	}
	return work
}

// WantsPartialResults reports whether the caller of the request that the
// handler whose ctx this is serves asked for partial results (LSP's
// partialResultToken): LSP then wants the partial results reported with
// ReportPartialResult and an empty final result. It reports false for a
// ctx that is no handler's, or a Peer with no progress dialect.
func WantsPartialResults(ctx context.Context) bool {
	p := PeerFromContext(ctx)
	return p != nil && p.opts.Progress != nil && !p.tokenOf(ctx, true).IsZero()
}

// StartProgress returns a ctx for which ReportProgress has a token: that
// of the request the handler whose ctx this is serves, if the caller gave
// one; else, if the dialect has a Create method (LSP's
// window/workDoneProgress/create), a new token that the Peer asks the
// other side to accept by calling Create, as a server starts progress by
// itself; else ctx itself, for which ReportProgress stays a no-op. It
// fails when the Create call fails (the other side refused the token).
func StartProgress(ctx context.Context) (context.Context, error) {
	p := PeerFromContext(ctx)
	if p == nil || p.opts.Progress == nil || !p.tokenOf(ctx, false).IsZero() || p.opts.Progress.Create == "" {
		return ctx, nil
	}
	token := p.newToken()
	if err := p.Call(ctx, p.opts.Progress.Create, json.RawMessage(idParams(`{"token":`, token, `}`)), nil); err != nil {
		return ctx, fmt.Errorf("jsonrpc: failed to create a progress token: %w", err)
	}
	return context.WithValue(ctx, startedKey{}, token), nil
}
