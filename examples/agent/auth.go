package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"

	"github.com/peerwire/jsonrpc"
)

// The token scheme: the host makes a fresh random token for each run and
// hands it to the tools it starts in their environment (tokenEnv), where
// nothing but the host and the tool can read it. Every call the host makes
// carries it in its named params as a "_meta" member, as MCP carries request
// metadata:
//
//	{"_meta":{"token":"…"},"path":"/home/user/notes.txt"}
//
// It is checked both ways: each side's outbound interceptor (addToken) puts
// it into every call it makes, and its inbound interceptor (requireToken)
// refuses any call without the right one before a handler sees it, so the
// host refuses a tool's callback that lacks it, as a tool refuses the host's.

// tokenEnv names the environment variable that carries the token to a tool.
const tokenEnv = "AGENT_TOOL_TOKEN"

// CodeUnauthorized answers a call that lacks the token or has a wrong one.
const CodeUnauthorized = -32010

// newToken returns a fresh random token.
func newToken() string { return rand.Text() }

// meta is the "_meta" member of the params of a call to a tool.
type meta struct {
	Token string `json:"token"`
}

// withToken returns params, which must marshal to a JSON object (or be nil),
// with a "_meta" member carrying token.
func withToken(params any, token string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if raw, ok := params.(json.RawMessage); ok && raw == nil {
		params = nil // absent params
	}
	if params != nil {
		raw, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("params of a tool call must be a JSON object: %w", err)
		}
	}
	if obj == nil {
		obj = make(map[string]json.RawMessage)
	}
	m, err := json.Marshal(meta{Token: token})
	if err != nil {
		return nil, err
	}
	obj["_meta"] = m
	return json.Marshal(obj)
}

// noTokenKey marks a ctx whose calls addToken leaves alone, so that the
// demo can show a call without the token being refused.
type noTokenKey struct{}

// addToken returns the host's outbound interceptor: it adds token to the
// params of every call and notification the host sends to a tool.
func addToken(token string) jsonrpc.Interceptor {
	return func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		if !info.Outbound || ctx.Value(noTokenKey{}) != nil {
			return next(ctx)
		}
		p, err := withToken(info.Params, token)
		if err != nil {
			return nil, err
		}
		info.Params = p
		return next(ctx)
	}
}

// requireToken returns the tools' interceptor: it lets an inbound call
// through only if its params carry token in "_meta", and refuses it with
// CodeUnauthorized otherwise. What the tool sends itself (its callbacks to
// the host) passes untouched.
func requireToken(token string) jsonrpc.Interceptor {
	want := []byte(token)
	return func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		if info.Outbound {
			return next(ctx)
		}
		var p struct {
			Meta meta `json:"_meta"`
		}
		// Absent params, an array, or an object without _meta: no token.
		if json.Unmarshal(info.Params, &p) != nil ||
			subtle.ConstantTimeCompare([]byte(p.Meta.Token), want) != 1 {
			return nil, jsonrpc.NewError(CodeUnauthorized, "unauthorized: missing or wrong token",
				map[string]string{"method": info.Method})
		}
		return next(ctx)
	}
}
