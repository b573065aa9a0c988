package stdio_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
)

// TestServeExitStatus (issue 31.11): a stdio server ends from a handler
// with an exit status, as every language server must on LSP's exit:
// Serve returns the code given to Exit, once the calls in progress have
// been answered; 0 when the other side ends the stream; 1 when the
// connection fails.
func TestServeExitStatus(t *testing.T) {
	release := make(chan struct{})
	mux := jsonrpc.NewMux()
	mux.HandleFunc("slow", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		<-release
		return "answered", nil
	})
	mux.HandleFunc("exit", func(ctx context.Context, _ *jsonrpc.Request) (any, error) {
		if err := stdio.Exit(ctx, 3); err != nil {
			t.Error(err)
		}
		close(release) // the slow call finishes after exit came
		return nil, nil
	})
	x, y := net.Pipe()
	served := make(chan int, 1)
	go func() { served <- stdio.Serve(stdio.NewConn(x, x), jsonrpc.Options{Handler: mux}) }()
	client := jsonrpc.NewPeer(stdio.NewConn(y, y))
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	slow := make(chan error, 1)
	var got string
	go func() { slow <- client.Call(ctx, "slow", nil, &got) }()
	time.Sleep(10 * time.Millisecond) // the slow call starts first
	if err := client.Notify(ctx, "exit", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-served:
		if code != 3 {
			t.Errorf("Serve = %d, want Exit's 3", code)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not return after Exit")
	}
	if err := <-slow; err != nil || got != "answered" {
		t.Errorf("the call in progress at exit: %q, %v; want its answer", got, err)
	}

	// The other side ends the stream: 0.
	x, y = net.Pipe()
	go func() { served <- stdio.Serve(stdio.NewConn(x, x), jsonrpc.Options{Handler: mux}) }()
	y.Close()
	if code := <-served; code != 0 {
		t.Errorf("Serve after a clean end = %d, want 0", code)
	}
}

// TestExitOutsideServe: Exit with a ctx that is no handler's of a Peer that
// Serve runs says so rather than doing nothing.
func TestExitOutsideServe(t *testing.T) {
	if err := stdio.Exit(context.Background(), 1); !errors.Is(err, stdio.ErrNotServed) {
		t.Errorf("Exit outside Serve = %v, want ErrNotServed", err)
	}
}
