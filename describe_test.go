package jsonrpc

import (
	"context"
	"reflect"
	"testing"
)

type postParams struct {
	Text string `json:"text"`
}

type postNote struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
}

// TestMuxMethods pins what Mux.Methods says of each way of registering:
// Register and RegisterNotification keep their types, Handle is untyped
// (never guessed at) until DescribeCall or DescribeNotification types it,
// and Describe adds the user's words without touching the types.
func TestMuxMethods(t *testing.T) {
	m := NewMux()
	Register(m, "board.post", func(context.Context, postParams) (postNote, error) { return postNote{}, nil })
	RegisterNotification(m, "board.typing", func(context.Context, [1]string) error { return nil })
	m.HandleFunc("raw", func(context.Context, *Request) (any, error) { return nil, nil })
	m.HandleFunc("raw.call", func(context.Context, *Request) (any, error) { return nil, nil })
	m.HandleFunc("raw.note", func(context.Context, *Request) (any, error) { return nil, nil })
	errs := []ErrorInfo{{Code: -32010, Message: "too long", Data: reflect.TypeFor[int]()}}
	m.Describe("board.post", Description{Summary: "posts a note", Errors: errs})
	DescribeCall[map[string]int, []string](m, "raw.call", Description{Doc: "d"})
	DescribeNotification[any](m, "raw.note", Description{Deprecated: true})

	want := []MethodInfo{
		{Name: "board.post", Params: reflect.TypeFor[postParams](), Result: reflect.TypeFor[postNote](),
			Description: Description{Summary: "posts a note", Errors: errs}},
		{Name: "board.typing", Params: reflect.TypeFor[[1]string](), Notification: true},
		{Name: "raw"},
		{Name: "raw.call", Params: reflect.TypeFor[map[string]int](), Result: reflect.TypeFor[[]string](), Description: Description{Doc: "d"}},
		{Name: "raw.note", Params: reflect.TypeFor[any](), Notification: true, Description: Description{Deprecated: true}},
	}
	if got := m.Methods(); !reflect.DeepEqual(got, want) {
		t.Errorf("Methods:\n got %+v\nwant %+v", got, want)
	}
}

// TestMuxSentAndTopics pins the declarations of what this side sends.
func TestMuxSentAndTopics(t *testing.T) {
	m := NewMux()
	DescribeSent[postNote](m, "board.posted", Description{Summary: "a note was posted"})
	DescribeSent[struct{}](m, "a.ping", Description{})
	DescribeTopic[postNote](m, "board", Description{Summary: "the board's news"})
	if got, want := m.Sent(), []MethodInfo{
		{Name: "a.ping", Params: reflect.TypeFor[struct{}](), Notification: true},
		{Name: "board.posted", Params: reflect.TypeFor[postNote](), Notification: true, Description: Description{Summary: "a note was posted"}},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("Sent:\n got %+v\nwant %+v", got, want)
	}
	if got, want := m.Topics(), []TopicInfo{
		{Name: "board", Message: reflect.TypeFor[postNote](), Description: Description{Summary: "the board's news"}},
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("Topics:\n got %+v\nwant %+v", got, want)
	}
	if len(NewMux().Methods()) != 0 || len(new(Mux).Sent()) != 0 || len(new(Mux).Topics()) != 0 {
		t.Error("an empty Mux describes something")
	}
}

// TestDescribeMistakes pins the panics of descriptions that would do
// nothing or contradict what the Mux knows.
func TestDescribeMistakes(t *testing.T) {
	m := NewMux()
	Register(m, "typed", func(context.Context, int) (int, error) { return 0, nil })
	DescribeSent[int](m, "sent", Description{})
	DescribeTopic[int](m, "t", Description{})
	for name, f := range map[string]func(){
		"Describe unknown":           func() { m.Describe("nope", Description{}) },
		"DescribeCall unknown":       func() { DescribeCall[int, int](m, "nope", Description{}) },
		"DescribeCall typed":         func() { DescribeCall[int, int](m, "typed", Description{}) },
		"DescribeNotification typed": func() { DescribeNotification[int](m, "typed", Description{}) },
		"DescribeSent twice":         func() { DescribeSent[int](m, "sent", Description{}) },
		"DescribeSent empty":         func() { DescribeSent[int](m, "", Description{}) },
		"DescribeTopic twice":        func() { DescribeTopic[int](m, "t", Description{}) },
		"DescribeTopic empty":        func() { DescribeTopic[int](m, "", Description{}) },
	} {
		if panicOf(f) == nil {
			t.Errorf("%s: no panic", name)
		}
	}
	if p := panicOf(func() { DescribeSent[int](m, "rpc.x", Description{}) }); !isErr(p, ErrReservedMethod) {
		t.Errorf("DescribeSent rpc.x panicked with %v, want ErrReservedMethod", p)
	}
}

// TestHandleDiscover pins the one way to serve a "rpc." name: Handle still
// refuses rpc.discover, HandleDiscover takes it once, and Methods leaves it
// out.
func TestHandleDiscover(t *testing.T) {
	m := NewMux()
	if p := panicOf(func() { m.HandleFunc(MethodDiscover, echo) }); !isErr(p, ErrReservedMethod) {
		t.Errorf("Handle(rpc.discover) panicked with %v, want ErrReservedMethod", p)
	}
	m.HandleDiscover(HandlerFunc(echo))
	if p := panicOf(func() { m.HandleDiscover(HandlerFunc(echo)) }); p == nil {
		t.Error("HandleDiscover twice did not panic")
	}
	if p := panicOf(func() { NewMux().HandleDiscover(nil) }); p == nil {
		t.Error("HandleDiscover(nil) did not panic")
	}
	if got := m.Methods(); len(got) != 0 {
		t.Errorf("Methods lists %v", got)
	}
}
