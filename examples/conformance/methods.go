package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/peerwire/jsonrpc"
)

// Limits on what a client may ask for.
const (
	maxSleep       = time.Hour
	maxNotifyCount = 100000
)

// CodeFail is the error code of the fail method.
const CodeFail = -32001

// newMux returns a Mux serving exactly the conformance methods.
func newMux() *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "subtract", subtract)
	jsonrpc.Register(m, "sum", sum)
	m.HandleFunc("get_data", func(context.Context, *jsonrpc.Request) (any, error) {
		return []any{"hello", 5}, nil
	})
	for _, name := range []string{"update", "notify_hello", "notify_sum"} {
		m.HandleFunc(name, func(context.Context, *jsonrpc.Request) (any, error) { return nil, nil })
	}
	m.HandleFunc("echo", echo)
	m.HandleFunc("fail", func(_ context.Context, req *jsonrpc.Request) (any, error) {
		return nil, &jsonrpc.Error{Code: CodeFail, Message: "fail", Data: req.Params}
	})
	m.HandleFunc("panic", func(context.Context, *jsonrpc.Request) (any, error) {
		panic("conformance: the panic method panics on purpose")
	})
	jsonrpc.Register(m, "sleep", sleep)
	jsonrpc.Register(m, "callback", callback)
	jsonrpc.Register(m, "notify_me", notifyMe)
	return m
}

// invalidParams returns a -32602 error whose data says why.
func invalidParams(format string, a ...any) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params", fmt.Sprintf(format, a...))
}

// number is a JSON number kept as its text, so that integers of any size
// stay exact. Unlike json.Number it rejects a JSON string.
type number string

func (n *number) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
		return fmt.Errorf("%.40s is not a number", b)
	}
	*n = number(b)
	return nil
}

// accumulator adds numbers: exactly while they are all integers, in float64
// once one is not.
type accumulator struct {
	i       big.Int
	f       float64
	isFloat bool
}

func (a *accumulator) add(n number, negate bool) error {
	if !a.isFloat {
		if i, ok := new(big.Int).SetString(string(n), 10); ok {
			if negate {
				i.Neg(i)
			}
			a.i.Add(&a.i, i)
			return nil
		}
		a.f, _ = a.i.Float64()
		a.isFloat = true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return fmt.Errorf("%s is out of range", n)
	}
	if negate {
		f = -f
	}
	a.f += f
	return nil
}

// result returns the total: a *big.Int (which marshals as a JSON integer)
// or a float64.
func (a *accumulator) result() (any, error) {
	if !a.isFloat {
		return &a.i, nil
	}
	if math.IsInf(a.f, 0) || math.IsNaN(a.f) {
		return nil, invalidParams("the result is out of range")
	}
	return a.f, nil
}

// subtractParams are [minuend, subtrahend] or {"minuend": x, "subtrahend": y}.
type subtractParams struct {
	Minuend    *number `json:"minuend"`
	Subtrahend *number `json:"subtrahend"`
}

func subtract(_ context.Context, p subtractParams) (any, error) {
	if p.Minuend == nil || p.Subtrahend == nil {
		return nil, invalidParams("want [minuend, subtrahend] or {\"minuend\": x, \"subtrahend\": y}")
	}
	var a accumulator
	if err := a.add(*p.Minuend, false); err != nil {
		return nil, invalidParams("%v", err)
	}
	if err := a.add(*p.Subtrahend, true); err != nil {
		return nil, invalidParams("%v", err)
	}
	return a.result()
}

func sum(_ context.Context, terms []number) (any, error) {
	if terms == nil {
		return nil, invalidParams("want an array of numbers")
	}
	var a accumulator
	for _, t := range terms {
		if err := a.add(t, false); err != nil {
			return nil, invalidParams("%v", err)
		}
	}
	return a.result()
}

// echo returns its params as they came; absent params give null.
func echo(_ context.Context, req *jsonrpc.Request) (any, error) {
	if req.Params == nil {
		return nil, nil
	}
	return req.Params, nil
}

type sleepParams struct {
	MS *int64 `json:"ms"`
}

// sleep waits p.MS milliseconds, or until its call is cancelled.
func sleep(ctx context.Context, p sleepParams) (int64, error) {
	if p.MS == nil || *p.MS < 0 || *p.MS > maxSleep.Milliseconds() {
		return 0, invalidParams("want {\"ms\": N} with 0 <= N <= %d", maxSleep.Milliseconds())
	}
	t := time.NewTimer(time.Duration(*p.MS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return *p.MS, nil
	case <-ctx.Done():
		return 0, ctx.Err() // the Peer answers Request cancelled
	}
}

type callbackParams struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// callback calls p.Method on the client and returns its result, or its
// error object as is.
func callback(ctx context.Context, p callbackParams) (json.RawMessage, error) {
	if p.Method == "" {
		return nil, invalidParams("want {\"method\": M, \"params\": P}")
	}
	var params any
	switch {
	case len(p.Params) == 0 || string(p.Params) == "null":
	case p.Params[0] == '{' || p.Params[0] == '[':
		params = p.Params
	default:
		return nil, invalidParams("params must be an object or an array")
	}
	var result json.RawMessage
	if err := jsonrpc.PeerFromContext(ctx).Call(ctx, p.Method, params, &result); err != nil {
		return nil, jsonrpc.Forward(err) // the client's error object, as is
	}
	return result, nil
}

type notifyMeParams struct {
	Method string `json:"method"`
	Count  *int   `json:"count"`
}

// notifyMe sends p.Count notifications p.Method with params {"seq": i}, in
// order, all written before the reply.
func notifyMe(ctx context.Context, p notifyMeParams) (int, error) {
	if p.Method == "" || p.Count == nil || *p.Count < 0 || *p.Count > maxNotifyCount {
		return 0, invalidParams("want {\"method\": M, \"count\": K} with 0 <= K <= %d", maxNotifyCount)
	}
	peer := jsonrpc.PeerFromContext(ctx)
	for i := range *p.Count {
		if err := peer.Notify(ctx, p.Method, struct {
			Seq int `json:"seq"`
		}{i}); err != nil {
			return 0, err
		}
	}
	return *p.Count, nil
}
