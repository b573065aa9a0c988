package jsonrpc

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestReviewPanicLogIsBounded: with Options.Logger unset, a remote client
// that calls a method whose handler panics makes the server write a log
// record with a full stack to slog.Default for every call, with no bound
// or rate: a hostile client's amplifier into the process's default log.
// Secure and bounded by default asks for a bound (say, the first few
// panics, then a count).
func TestReviewPanicLogIsBounded(t *testing.T) {
	var out lockedBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&out, nil)))
	defer slog.SetDefault(prev)

	mux := NewMux()
	mux.HandleFunc("boom", func(context.Context, *Request) (any, error) {
		panic("assignment to entry in nil map") // the newcomer's bug, reachable by any client
	})
	a, b := Pipe()
	server := NewPeer(a, Options{Handler: mux})
	client := NewPeer(b)
	defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
	const calls = 200
	ctx := testCtx(t, wait)
	for range calls {
		_ = client.Call(ctx, "boom", nil, nil)
	}
	logged := out.String()
	records := strings.Count(logged, "handler panicked")
	sent := calls * len(`{"jsonrpc":"2.0","id":123,"method":"boom"}`)
	t.Logf("%d calls (~%d bytes sent): %d records, %d bytes logged (%.0fx)", calls, sent, records, len(logged), float64(len(logged))/float64(sent))
	if records > 20 {
		t.Fatalf("%d panicking calls wrote %d records, %d bytes (%.0fx the ~%d bytes sent) to slog.Default: unbounded", calls, records, len(logged), float64(len(logged))/float64(sent), sent)
	}
}
