package jsonrpc

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestProgressTokensOfTwoPeersDoNotClash: two Peers of this library both
// make progress tokens. The server's own progress (StartProgress, then
// ReportProgress) reaches the client's Handler, every report of it, and
// never the WithProgress function of a call of the client's that happens
// to be in flight. (On 3db20dd both sides made "peerwire-progress-N" from
// counters that start alike: 0 of 6 reports reached the Handler, and the
// client's own call got the server's progress or dropped it as late.)
func TestProgressTokensOfTwoPeersDoNotClash(t *testing.T) {
	const reports = 6
	srv := NewMux()
	srv.HandleFunc("work", func(ctx context.Context, req *Request) (any, error) {
		ctx, err := StartProgress(ctx)
		if err != nil {
			return nil, err
		}
		for i := range reports {
			if err := ReportProgress(ctx, map[string]any{"kind": "report", "percentage": i}); err != nil {
				return nil, err
			}
		}
		return "done", nil
	})
	release := make(chan struct{})
	srv.HandleFunc("wait", func(ctx context.Context, req *Request) (any, error) {
		<-release
		return "done", nil
	})
	var (
		mu       sync.Mutex
		created  []string // tokens the server asked the client to accept
		handled  []string // tokens of the $/progress notifications the client's Handler got
		ownCalls atomic.Int64
	)
	cli := NewMux()
	cli.HandleFunc("window/workDoneProgress/create", func(ctx context.Context, req *Request) (any, error) {
		mu.Lock()
		created = append(created, string(rawMember(t, req.Params, "token")))
		mu.Unlock()
		return nil, nil
	})
	cli.HandleFunc("$/progress", func(ctx context.Context, req *Request) (any, error) {
		mu.Lock()
		handled = append(handled, string(rawMember(t, req.Params, "token")))
		mu.Unlock()
		return nil, nil
	})
	opts := &Options{Progress: LSPProgress}
	client, _ := newPair(t, cli, srv, opts, opts)
	// Calls of the client's with progress functions of their own, which
	// the server never reports to, in flight while the server starts
	// progress of its own: whatever reaches them is someone else's.
	ctx := testCtx(t, wait)
	waits := make(chan error, 4)
	for range 4 {
		pctx := WithProgress(ctx, func(v json.RawMessage) { ownCalls.Add(1) })
		go func() { waits <- client.Call(pctx, "wait", map[string]any{}, nil) }()
	}
	for range 4 {
		var res string
		if err := client.Call(ctx, "work", map[string]any{}, &res); err != nil || res != "done" {
			t.Fatalf("work = %q, %v", res, err)
		}
	}
	close(release)
	for range 4 {
		if err := within(t, waits, "a waiting call"); err != nil {
			t.Fatal(err)
		}
	}
	// The notifications are handled in order, after the calls' replies
	// may have come: wait for them.
	eventually(t, "every report of the server's own progress handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == 4*reports
	})
	if n := ownCalls.Load(); n != 0 {
		t.Errorf("%d reports of the server's own progress ran a function of a call of the client's", n)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{}
	for _, tok := range created {
		if seen[tok] {
			t.Errorf("token %s created twice", tok)
		}
		seen[tok] = true
	}
	for _, tok := range handled {
		if !seen[tok] {
			t.Errorf("progress for %s, a token the server never created", tok)
		}
	}
}

// TestProgressTokensUnguessable: the tokens one Peer makes share nothing
// a remote could count on to aim progress at another call: two tokens in
// a row differ in more than a counter, and two Peers' tokens differ.
func TestProgressTokensUnguessable(t *testing.T) {
	opts := &Options{Progress: LSPProgress}
	a, b := newPair(t, nil, nil, opts, opts)
	t1, t2 := a.newToken().raw, a.newToken().raw
	t3 := b.newToken().raw
	if t1 == t3 {
		t.Errorf("two Peers made the same token %s", t1)
	}
	// Beyond the Peer's own prefix, the tokens have nothing in common
	// that grows by one.
	common := 0
	for common < len(t1) && common < len(t2) && t1[common] == t2[common] {
		common++
	}
	if rest := t1[common:]; len(rest) < 12 {
		t.Errorf("consecutive tokens %s and %s differ only in %q: guessable", t1, t2, rest)
	}
	if strings.Contains(t1, "progress-1\"") || strings.Contains(t2, "progress-2\"") {
		t.Errorf("tokens %s, %s are a counter", t1, t2)
	}
}
