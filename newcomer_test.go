package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Issue 31's points on the core: errors that name their cause and leak
// nothing, and no silent no-op. Each test failed on 3db20dd.

// TestRemoteErrorNotForwardedAsIs (31.4): a handler whose own call to the
// other side failed with that side's error returns it (wrapped or not);
// the error is the handler's failure, not the other side's answer to the
// call being served: it must not go out as is. On 3db20dd a handler whose
// callback got -32601 made a call to a method that exists answer "Method
// not found". A handler that means to forward it says so with Forward.
func TestRemoteErrorNotForwardedAsIs(t *testing.T) {
	srv := mux(t, map[string]HandlerFunc{
		"plain": func(ctx context.Context, _ *Request) (any, error) {
			return nil, PeerFromContext(ctx).Call(ctx, "missing", nil, nil)
		},
		"wrapped": func(ctx context.Context, _ *Request) (any, error) {
			err := PeerFromContext(ctx).Call(ctx, "missing", nil, nil)
			return nil, errors.Join(errors.New("callback failed"), err)
		},
		"forwarded": func(ctx context.Context, _ *Request) (any, error) {
			err := PeerFromContext(ctx).Call(ctx, "missing", nil, nil)
			return nil, Forward(err) // on purpose
		},
	})
	client, _ := newPair(t, nil, srv, nil, nil)
	ctx := testCtx(t, wait)
	for method, want := range map[string]int64{"plain": CodeInternalError, "wrapped": CodeInternalError, "forwarded": CodeMethodNotFound} {
		err := client.Call(ctx, method, nil, nil)
		if code := errorCode(t, err); code != want {
			t.Errorf("%s: the client got %v, want code %d", method, err, want)
		}
	}
}

// TestCallErrorNamesMethod (31.5): an error a Call returns says which
// method it was, whether the other side answered with an error, the params
// would not marshal, or the ctx ended.
func TestCallErrorNamesMethod(t *testing.T) {
	client, _ := newPair(t, nil, nil, nil, nil)
	ctx := testCtx(t, wait)
	err := client.Call(ctx, "board.post", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "board.post") {
		t.Errorf("the error of a call to a missing method = %v, want it to name board.post", err)
	}
	if !errors.Is(err, &Error{Code: CodeMethodNotFound}) {
		t.Errorf("%v is not Method not found by errors.Is", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeMethodNotFound || e.Message != "Method not found" {
		t.Errorf("errors.As gives %+v, want the wire's error object", e)
	}
	elems := []BatchElem{{Method: "board.like"}}
	if err := client.Batch(ctx, elems); err != nil {
		t.Fatal(err)
	}
	if err := elems[0].Error; err == nil || !strings.Contains(err.Error(), "board.like") {
		t.Errorf("a batch element's error = %v, want it to name board.like", err)
	}
}

// TestInvalidParamsTextNamesNoGoTypes (31.5): the data of an Invalid params
// error tells the caller where its params went wrong, in JSON's words: no
// Go type, struct field or package path. On 3db20dd it read "cannot
// unmarshal string into .0 of type int" and "Go struct field
// WordFrequencyParams.textDocument of type struct {...}".
func TestInvalidParamsTextNamesNoGoTypes(t *testing.T) {
	type position struct {
		Line int `json:"line"`
	}
	type wordParams struct {
		TextDocument struct {
			URI string `json:"uri"`
		} `json:"textDocument"`
		Position position `json:"position"`
		Tags     []string `json:"tags"`
	}
	srv := NewMux()
	Register(srv, "pair", func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil })
	Register(srv, "words", func(_ context.Context, p wordParams) (int, error) { return 0, nil })
	client, _ := newPair(t, nil, srv, nil, nil)
	ctx := testCtx(t, wait)
	for _, tc := range []struct {
		method string
		params string
		where  string // the place the text must name
	}{
		{"pair", `["a", 2]`, "[0]"},
		{"words", `{"textDocument": 3}`, "textDocument"},
		{"words", `{"textDocument": {"uri": 7}}`, "textDocument.uri"},
		{"words", `{"position": {"line": "x"}}`, "position.line"},
		{"words", `{"tags": [1]}`, "tags[0]"},
	} {
		err := client.Call(ctx, tc.method, json.RawMessage(tc.params), nil)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidParams {
			t.Errorf("%s %s: %v, want Invalid params", tc.method, tc.params, err)
			continue
		}
		text := string(e.Data)
		for _, leak := range []string{"Go ", "struct", "of type", "into", "wordParams", "position{", "jsonrpc.", "main."} {
			if strings.Contains(text, leak) {
				t.Errorf("%s %s: the data %s names Go (%q)", tc.method, tc.params, text, leak)
			}
		}
		if !strings.Contains(text, tc.where) {
			t.Errorf("%s %s: the data %s does not say where (%s)", tc.method, tc.params, text, tc.where)
		}
	}
}

// TestArrayParamsRefuseSurplus (31.5): positional params for a [2]int
// handler take two elements at most, as a struct's positional params
// refuse surplus elements. On 3db20dd [1,2,3] was accepted and 3 dropped.
func TestArrayParamsRefuseSurplus(t *testing.T) {
	srv := NewMux()
	Register(srv, "pair", func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil })
	client, _ := newPair(t, nil, srv, nil, nil)
	ctx := testCtx(t, wait)
	var sum int
	if err := client.Call(ctx, "pair", []int{1, 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("[1,2] = %d, %v", sum, err)
	}
	err := client.Call(ctx, "pair", []int{1, 2, 3}, &sum)
	if code := errorCode(t, err); code != CodeInvalidParams {
		t.Errorf("[1,2,3] for a [2]int = %v, want Invalid params", err)
	}
}

// TestProgressParamsErrorReadsOnce (31.5): a Call with progress and array
// params fails with one clear reason, not "params must be a JSON object or
// array: progress needs params that are a JSON object".
func TestProgressParamsErrorReadsOnce(t *testing.T) {
	opts := &Options{Progress: LSPProgress}
	client, _ := newPair(t, nil, nil, opts, opts)
	ctx := WithProgress(testCtx(t, wait), func(json.RawMessage) {})
	err := client.Call(ctx, "m", []int{1}, nil)
	if !errors.Is(err, ErrInvalidParams) {
		t.Fatalf("Call = %v, want ErrInvalidParams", err)
	}
	if strings.Contains(err.Error(), "object or array") {
		t.Errorf("%q contradicts itself", err)
	}
}

// TestNilCtxIsAnError (31.5): Call, Notify and Batch with a nil ctx fail
// with an error saying so; on 3db20dd they panicked with a nil pointer.
func TestNilCtxIsAnError(t *testing.T) {
	client, _ := newPair(t, nil, nil, nil, nil)
	var nilCtx context.Context
	for name, f := range map[string]func() error{
		"Call":   func() error { return client.Call(nilCtx, "m", nil, nil) },
		"Notify": func() error { return client.Notify(nilCtx, "m", nil) },
		"Batch":  func() error { return client.Batch(nilCtx, []BatchElem{{Method: "m"}}) },
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s with a nil ctx panicked: %v", name, r)
				}
			}()
			if err := f(); err == nil || !strings.Contains(err.Error(), "nil") {
				t.Errorf("%s with a nil ctx = %v, want an error saying the ctx is nil", name, err)
			}
		}()
	}
}

// TestWithProgressWithoutDialectFails (31.6): a Call made with WithProgress
// (or WithPartialResults) on a Peer that has no progress dialect fails at
// once, saying what to set, instead of succeeding with the function never
// called.
func TestWithProgressWithoutDialectFails(t *testing.T) {
	client, _ := newPair(t, nil, nil, nil, nil)
	for name, ctx := range map[string]context.Context{
		"WithProgress":       WithProgress(testCtx(t, wait), func(json.RawMessage) {}),
		"WithPartialResults": WithPartialResults(testCtx(t, wait), func(json.RawMessage) {}),
	} {
		err := client.Call(ctx, "m", nil, nil)
		if !errors.Is(err, ErrNoProgressDialect) || !strings.Contains(err.Error(), "Options.Progress") {
			t.Errorf("%s on a Peer without Options.Progress: %v, want ErrNoProgressDialect naming Options.Progress", name, err)
		}
	}
}

// TestWantsPartialResults (31.11): a handler can ask whether its caller
// wants partial results (LSP's partialResultToken), as LSP needs to know
// whether to send an empty final result.
func TestWantsPartialResults(t *testing.T) {
	var asked []bool
	srv := mux(t, map[string]HandlerFunc{"refs": func(ctx context.Context, _ *Request) (any, error) {
		asked = append(asked, WantsPartialResults(ctx))
		return []int{}, nil
	}})
	opts := &Options{Progress: LSPProgress}
	client, _ := newPair(t, nil, srv, opts, opts)
	ctx := testCtx(t, wait)
	if err := client.Call(ctx, "refs", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := client.Call(WithPartialResults(ctx, func(json.RawMessage) {}), "refs", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 || asked[0] || !asked[1] {
		t.Errorf("WantsPartialResults = %v, want [false true]", asked)
	}
	if WantsPartialResults(context.Background()) {
		t.Error("WantsPartialResults of a ctx that is no handler's = true")
	}
}
