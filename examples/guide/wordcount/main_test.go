package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const text = "one two\nthree\n\nfour five six"

var want = []LineCount{{0, 2}, {1, 1}, {2, 0}, {3, 3}}

// TestWordcountInProcess: over a Pipe, with stdio.Serve as main runs it,
// progress arrives before the reply, partial results replace the final
// result when asked for, and shutdown then exit makes Serve return 0.
func TestWordcountInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := jsonrpc.Pipe()
	code := make(chan int, 1)
	go func() { code <- stdio.Serve(a, options()) }()
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Progress: jsonrpc.LSPProgress, Cancel: jsonrpc.LSPCancel})
	defer client.Close()
	checkSession(ctx, t, client)
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("Serve returned %d, want 0", c)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not return after exit")
	}
}

// TestWordcountChildProcess: the built program, started by stdio.Command
// as an editor would, answers the same and exits 0.
func TestWordcountChildProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "wordcount")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	conn, err := stdio.Command(exec.Command(bin))
	if err != nil {
		t.Fatal(err)
	}
	client := jsonrpc.NewPeer(conn, jsonrpc.Options{Progress: jsonrpc.LSPProgress, Cancel: jsonrpc.LSPCancel})
	checkSession(ctx, t, client)
	if err := client.Wait(); err != nil {
		t.Fatalf("the child's end: %v", err)
	}
	if st := conn.ProcessState(); st == nil || st.ExitCode() != 0 {
		t.Fatalf("exit status %v, want 0", st)
	}
}

// checkSession runs initialize, wordcount/lines with progress, with
// partial results, then shutdown and exit.
func checkSession(ctx context.Context, t *testing.T, client *jsonrpc.Peer) {
	t.Helper()
	if err := client.Call(ctx, "initialize", map[string]any{"capabilities": map[string]any{}}, nil); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var progress []json.RawMessage
	pctx := jsonrpc.WithProgress(ctx, func(v json.RawMessage) { mu.Lock(); progress = append(progress, v); mu.Unlock() })
	var counts []LineCount
	if err := client.Call(pctx, "wordcount/lines", LinesParams{Text: text}, &counts); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !reflect.DeepEqual(counts, want) || len(progress) != 2+len(want) {
		t.Fatalf("counts %v, %d progress reports: want %v, %d", counts, len(progress), want, 2+len(want))
	}
	mu.Unlock()

	var parts []LineCount
	rctx := jsonrpc.WithPartialResults(ctx, func(v json.RawMessage) {
		var part []LineCount
		if err := json.Unmarshal(v, &part); err != nil {
			t.Errorf("partial result %s: %v", v, err)
		}
		parts = append(parts, part...) // on the caller's goroutine, in order, before Call returns
	})
	counts = nil
	if err := client.Call(rctx, "wordcount/lines", LinesParams{Text: text}, &counts); err != nil {
		t.Fatal(err)
	}
	if len(counts) != 0 || !reflect.DeepEqual(parts, want) {
		t.Fatalf("final %v, parts %v: want an empty final and parts %v", counts, parts, want)
	}

	if err := client.Call(ctx, "shutdown", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := client.Notify(ctx, "exit", nil); err != nil {
		t.Fatal(err)
	}
}
