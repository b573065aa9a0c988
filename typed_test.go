package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

type point struct {
	X, Y   int
	hidden int //lint:ignore U1000 an unexported field, which positional params skip
	Skip   int `json:"-"`
	Label  string
}

// typedCase runs one handler on raw params: want is the JSON of the value
// fn saw, or "" when the params must be refused with -32602 without calling
// fn.
type typedCase struct {
	name   string
	h      func(saw *any) Handler
	params string // "" for absent
	want   string
}

// seen builds a Typed handler that records the P it was called with.
func seen[P any]() func(saw *any) Handler {
	return func(saw *any) Handler {
		return Typed(func(_ context.Context, p P) (string, error) {
			*saw = p
			return "ok", nil
		})
	}
}

var typedCases = []typedCase{
	{"struct positional", seen[point](), `[1, 2, "p"]`, `{"X":1,"Y":2,"Label":"p"}`},
	{"struct positional, fewer", seen[point](), `[1]`, `{"X":1,"Y":0,"Label":""}`},
	{"struct named", seen[point](), `{"Y":2,"X":1}`, `{"X":1,"Y":2,"Label":""}`},
	{"struct pointer positional", seen[*point](), `[3,4]`, `{"X":3,"Y":4,"Label":""}`},
	{"struct absent", seen[point](), ``, `{"X":0,"Y":0,"Label":""}`},
	{"struct too many positional", seen[point](), `[1,2,"p",4]`, ``},
	{"struct wrong type positional", seen[point](), `["one",2]`, ``},
	{"struct wrong type named", seen[point](), `{"X":"one"}`, ``},
	{"scalar one-element array", seen[int](), `[5]`, `5`},
	{"scalar string", seen[string](), `["s"]`, `"s"`},
	{"scalar two elements", seen[int](), `[5,6]`, ``},
	{"scalar empty array", seen[int](), `[]`, ``},
	{"scalar from object", seen[int](), `{"a":1}`, ``},
	{"scalar wrong type", seen[int](), `["5"]`, ``},
	{"float slice", seen[[]float64](), `[1, 2.5, -3]`, `[1,2.5,-3]`},
	{"float slice from object", seen[[]float64](), `{"a":1}`, ``},
	{"float slice wrong element", seen[[]float64](), `[1,"x"]`, ``},
	{"array type", seen[[2]int](), `[1,2]`, `[1,2]`},
	{"raw message array", seen[json.RawMessage](), `[1, {"a": 2}]`, `[1,{"a":2}]`},
	{"raw message object", seen[json.RawMessage](), `{"a":[1]}`, `{"a":[1]}`},
	{"map named", seen[map[string]int](), `{"a":1}`, `{"a":1}`},
	{"any", seen[any](), `[1,"x"]`, `[1,"x"]`},
}

func TestTyped(t *testing.T) {
	for _, tc := range typedCases {
		t.Run(tc.name, func(t *testing.T) {
			var saw any
			h := tc.h(&saw)
			req := &Request{ID: Int64ID(1), Method: "m"}
			if tc.params != "" {
				req.Params = json.RawMessage(tc.params)
			}
			res, err := h.ServeRPC(context.Background(), req)
			called := saw != nil || (err == nil && res == "ok")
			if tc.want == "" {
				var e *Error
				if !errors.As(err, &e) || e.Code != CodeInvalidParams {
					t.Fatalf("got %v, %v; want Invalid params", res, err)
				}
				if called {
					t.Errorf("fn was called with %#v", saw)
				}
				return
			}
			if err != nil || res != "ok" {
				t.Fatalf("got %v, %v", res, err)
			}
			b, err := json.Marshal(saw)
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, b, tc.want)
		})
	}
}

// TestTypedOverTheWire: positional and named params reach the same typed
// handler; bad params are refused with data saying why.
func TestTypedOverTheWire(t *testing.T) {
	m := NewMux()
	var calls int
	Register(m, "norm", func(_ context.Context, p point) (int, error) {
		calls++
		return p.X*p.X + p.Y*p.Y, nil
	})
	a, _ := newPair(t, nil, m, nil, nil)
	ctx := testCtx(t, wait)
	for _, params := range []any{[]int{3, 4}, map[string]int{"X": 3, "Y": 4}, point{X: 3, Y: 4}} {
		var got int
		if err := a.Call(ctx, "norm", params, &got); err != nil || got != 25 {
			t.Errorf("norm(%v) = %d, %v", params, got, err)
		}
	}
	err := a.Call(ctx, "norm", []any{1, 2, "l", 4}, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidParams || len(e.Data) == 0 {
		t.Fatalf("too many params: %v", err)
	}
	if calls != 3 {
		t.Errorf("fn called %d times, want 3", calls)
	}
}

// TestTypedResultAndError: the result is marshalled, an error is mapped.
func TestTypedResultAndError(t *testing.T) {
	h := Typed(func(_ context.Context, n int) (map[string]int, error) {
		if n < 0 {
			return nil, NewError(1, "negative", n)
		}
		return map[string]int{"n": n}, nil
	})
	res, err := h.ServeRPC(context.Background(), &Request{Params: json.RawMessage(`[2]`)})
	if err != nil || !reflect.DeepEqual(res, map[string]int{"n": 2}) {
		t.Errorf("got %v, %v", res, err)
	}
	_, err = h.ServeRPC(context.Background(), &Request{Params: json.RawMessage(`[-1]`)})
	if e := new(Error); !errors.As(err, &e) || e.Code != 1 || string(e.Data) != "-1" {
		t.Errorf("got %v", err)
	}
	if p := panicOf(func() { Register(NewMux(), "rpc.x", func(context.Context, int) (int, error) { return 0, nil }) }); !isErr(p, ErrReservedMethod) {
		t.Errorf("Register rpc.x panicked with %v, want ErrReservedMethod", p)
	}
}

// TestRegisterNotification: a typed notification handler gets its params
// decoded like a call's, in order, with no result to make up; sent as a
// call, the method answers null or its error.
func TestRegisterNotification(t *testing.T) {
	m := NewMux()
	got := make(chan point, 3)
	RegisterNotification(m, "moved", func(_ context.Context, p point) error {
		if p.X < 0 {
			return NewError(1, "off the board", nil)
		}
		got <- p
		return nil
	})
	a, _ := newPair(t, nil, m, nil, nil)
	ctx := testCtx(t, wait)
	for _, params := range []any{[]int{1, 2}, map[string]int{"X": 3, "Y": 4}} {
		if err := a.Notify(ctx, "moved", params); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []point{{X: 1, Y: 2}, {X: 3, Y: 4}} {
		if p := <-got; p != want {
			t.Errorf("got %+v, want %+v", p, want)
		}
	}
	var res json.RawMessage
	if err := a.Call(ctx, "moved", []int{5, 6}, &res); err != nil || string(res) != "null" {
		t.Errorf("as a call: result %s, %v; want null", res, err)
	}
	if p := <-got; p != (point{X: 5, Y: 6}) {
		t.Errorf("as a call: got %+v", p)
	}
	err := a.Call(ctx, "moved", []int{-1, 0}, nil)
	if e := new(Error); !errors.As(err, &e) || e.Code != 1 {
		t.Errorf("as a call, failing: %v", err)
	}
	if err := a.Call(ctx, "moved", []string{"x"}, nil); !errors.Is(err, &Error{Code: CodeInvalidParams}) {
		t.Errorf("bad params as a call: %v", err)
	}
}
