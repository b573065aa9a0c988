package jsonrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// connect starts two Peers over an in-memory Pipe: a server serving h and a
// client serving nothing (or clientH). stop closes both and waits for them.
func connect(h, clientH jsonrpc.Handler) (client *jsonrpc.Peer, stop func()) {
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: h})
	client = jsonrpc.NewPeer(b, jsonrpc.Options{Handler: clientH})
	return client, func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	}
}

func ExamplePeer_Call() {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "add", func(ctx context.Context, p [2]int) (int, error) {
		return p[0] + p[1], nil
	})
	client, stop := connect(mux, nil)
	defer stop()

	var sum int
	if err := client.Call(context.Background(), "add", []int{1, 2}, &sum); err != nil {
		fmt.Println(err)
	}
	fmt.Println(sum)

	err := client.Call(context.Background(), "nosuch", nil, nil)
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Message)
	}
	// Output:
	// 3
	// -32601 Method not found
}

func ExampleRegister() {
	type point struct {
		X, Y int
	}
	mux := jsonrpc.NewMux()
	// Named params {"X":…,"Y":…} and positional params [x, y] both fill point.
	jsonrpc.Register(mux, "norm1", func(ctx context.Context, p point) (int, error) {
		return abs(p.X) + abs(p.Y), nil
	})
	client, stop := connect(mux, nil)
	defer stop()

	var a, b int
	client.Call(context.Background(), "norm1", map[string]int{"X": 3, "Y": -4}, &a)
	client.Call(context.Background(), "norm1", []int{-1, 2}, &b)
	fmt.Println(a, b)

	err := client.Call(context.Background(), "norm1", []string{"x"}, nil)
	fmt.Println(errors.Is(err, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}))
	// Output:
	// 7 3
	// true
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func ExamplePeer_Notify() {
	got := make(chan string, 1)
	mux := jsonrpc.NewMux()
	jsonrpc.RegisterNotification(mux, "log", func(ctx context.Context, p []string) error {
		got <- p[0]
		return nil // a notification's error goes nowhere
	})
	client, stop := connect(mux, nil)
	defer stop()

	client.Notify(context.Background(), "log", []string{"hello"})
	fmt.Println(<-got)
	// Output: hello
}

// A notification handler with typed params and no result. Notifications
// run one at a time in the order they arrive, and a call starts only after
// the notifications sent before it: here "total" sees every "add".
func ExampleRegisterNotification() {
	type change struct {
		Key   string
		Delta int
	}
	var mu sync.Mutex
	totals := map[string]int{}
	mux := jsonrpc.NewMux()
	// Positional params ["a", 2] fill change's fields in order, as for Register.
	jsonrpc.RegisterNotification(mux, "add", func(ctx context.Context, c change) error {
		mu.Lock()
		defer mu.Unlock()
		totals[c.Key] += c.Delta
		return nil
	})
	jsonrpc.Register(mux, "total", func(ctx context.Context, key string) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return totals[key], nil
	})
	client, stop := connect(mux, nil)
	defer stop()

	ctx := context.Background()
	client.Notify(ctx, "add", []any{"a", 2})
	client.Notify(ctx, "add", map[string]any{"Key": "a", "Delta": 40})
	var total int
	err := client.Call(ctx, "total", []string{"a"}, &total)
	fmt.Println(total, err)
	// Output: 42 <nil>
}

func ExamplePeer_Batch() {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "div", func(ctx context.Context, p [2]int) (int, error) {
		if p[1] == 0 {
			return 0, jsonrpc.NewError(-32001, "division by zero", p)
		}
		return p[0] / p[1], nil
	})
	client, stop := connect(mux, nil)
	defer stop()

	var q1, q2 int
	batch := []jsonrpc.BatchElem{
		{Method: "div", Params: []int{10, 2}, Result: &q1},
		{Method: "div", Params: []int{1, 0}, Result: &q2},
		{Method: "div", Params: []int{4, 2}, Notification: true},
	}
	if err := client.Batch(context.Background(), batch); err != nil {
		fmt.Println(err)
	}
	fmt.Println(q1, batch[0].Error)
	fmt.Println(batch[1].Error)
	// Output:
	// 5 <nil>
	// jsonrpc: div: code -32001: division by zero: [1,0]
}

func ExamplePeerFromContext() {
	// The server's handler calls back the client on the same connection.
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "greet", func(ctx context.Context, p struct{}) (string, error) {
		var name string
		err := jsonrpc.PeerFromContext(ctx).Call(ctx, "whoami", nil, &name)
		return "hello, " + name, err
	})
	clientMux := jsonrpc.NewMux()
	jsonrpc.Register(clientMux, "whoami", func(ctx context.Context, p struct{}) (string, error) {
		return "gopher", nil
	})
	client, stop := connect(mux, clientMux)
	defer stop()

	var greeting string
	client.Call(context.Background(), "greet", nil, &greeting)
	fmt.Println(greeting)
	// Output: hello, gopher
}

func Example_cancellation() {
	// When a Call's ctx ends, the Call returns and the server's handler sees
	// its ctx cancelled: both sides speak LSP's cancellation dialect, so the
	// client sent $/cancelRequest. (The specification defines none, so a
	// Peer sends none unless told which.)
	cancelled := make(chan error, 1)
	mux := jsonrpc.NewMux()
	mux.HandleFunc("slow", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	})
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux, Cancel: jsonrpc.LSPCancel})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Cancel: jsonrpc.LSPCancel})
	defer server.Wait()
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := client.Call(ctx, "slow", nil, nil)
	fmt.Println(err)
	fmt.Println(<-cancelled)
	// Output:
	// context deadline exceeded
	// context canceled
}

func ExampleRequestFromContext() {
	// A typed handler sees its own request: its id (a progress token, say)
	// and its method.
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "whoami", func(ctx context.Context, p struct{}) (string, error) {
		req := jsonrpc.RequestFromContext(ctx)
		return fmt.Sprintf("%s, id %s", req.Method, req.ID), nil
	})
	client, stop := connect(mux, nil)
	defer stop()
	var s string
	client.Call(context.Background(), "whoami", nil, &s)
	fmt.Println(s)
	// Output: whoami, id 1
}

func ExampleInterceptor() {
	// One interceptor sees every call and notification a Peer sends or
	// serves: here it logs them (with the elapsed time, which a real
	// logger would print) and refuses inbound calls without a token.
	logCalls := func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		start := time.Now()
		res, err := next(ctx)
		_ = time.Since(start)
		dir := "served"
		if info.Outbound {
			dir = "sent"
		}
		fmt.Printf("%s %s id=%s err=%v\n", dir, info.Method, info.ID, err)
		return res, err
	}
	requireToken := func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		var p struct{ Token string }
		json.Unmarshal(info.Params, &p)
		if p.Token != "s3cret" {
			return nil, jsonrpc.NewError(-32010, "missing token", nil)
		}
		return next(ctx)
	}
	mux := jsonrpc.NewMux()
	mux.HandleFunc("ping", func(ctx context.Context, req *jsonrpc.Request) (any, error) { return "pong", nil })

	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux, Interceptors: []jsonrpc.Interceptor{requireToken}})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Interceptors: []jsonrpc.Interceptor{logCalls}})
	defer func() { client.Close(); server.Wait() }()

	client.Call(context.Background(), "ping", map[string]string{"token": "s3cret"}, nil)
	client.Call(context.Background(), "ping", map[string]string{}, nil)
	// Output:
	// sent ping id=1 err=<nil>
	// sent ping id=2 err=jsonrpc: ping: code -32010: missing token
}

// A server pushes one notification to every client through a Group; a
// client that stops reading would be dropped without holding up the others.
// Here three clients over Pipes.
func ExampleGroup() {
	var g jsonrpc.Group
	got := make(chan string, 3)
	var stops []func()
	for i := range 3 {
		name := fmt.Sprint("client ", i)
		mux := jsonrpc.NewMux()
		jsonrpc.RegisterNotification(mux, "note", func(ctx context.Context, p []string) error {
			got <- name + " got " + p[0]
			return nil
		})
		a, b := jsonrpc.Pipe()
		server := jsonrpc.NewPeer(a) // the server's end of client i's connection
		client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: mux})
		g.Add(server)
		stops = append(stops, func() { client.Close(); server.Close(); client.Wait(); server.Wait() })
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()

	g.Notify("note", []string{"hello"})
	var lines []string
	for range g.Len() {
		lines = append(lines, <-got)
	}
	slices.Sort(lines) // members are served concurrently
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// client 0 got hello
	// client 1 got hello
	// client 2 got hello
}

func ExampleWithProgress() {
	// A server reports progress on a call in MCP's dialect; the client's
	// function sees every report, in order, before Call returns.
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "tools/call", func(ctx context.Context, p struct{ Name string }) (string, error) {
		for i := 1; i <= 3; i++ {
			progress := map[string]any{"progress": i, "total": 3, "message": fmt.Sprintf("step %d", i)}
			if err := jsonrpc.ReportProgress(ctx, progress); err != nil { // a no-op without a token
				return "", err
			}
		}
		return p.Name + " done", nil
	})
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux, Progress: jsonrpc.MCPProgress})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Progress: jsonrpc.MCPProgress})
	defer server.Wait()
	defer client.Close()

	ctx := jsonrpc.WithProgress(context.Background(), func(params json.RawMessage) {
		var p struct{ Message string }
		json.Unmarshal(params, &p)
		fmt.Println("progress:", p.Message)
	})
	var result string
	err := client.Call(ctx, "tools/call", map[string]string{"name": "index"}, &result)
	fmt.Println(result, err)
	// Output:
	// progress: step 1
	// progress: step 2
	// progress: step 3
	// index done <nil>
}
