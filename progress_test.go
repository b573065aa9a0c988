package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/peerwire/jsonrpc/internal/testbin"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// dialects are the progress dialects the tests run with.
var dialects = []struct {
	name string
	d    *ProgressDialect
}{{"LSP", LSPProgress}, {"MCP", MCPProgress}}

// TestProgressBeforeReply is issue 21's scenario: a handler reports
// progress 20 times, then returns. Every report reaches the caller's
// function, in order, before Call returns, in every one of 200 rounds.
// (With Notify and a notification handler instead, 94 of 200 rounds
// returned early under -race.)
func TestProgressBeforeReply(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			srv := NewMux()
			srv.HandleFunc("work", func(ctx context.Context, req *Request) (any, error) {
				for i := range 20 {
					if err := ReportProgress(ctx, map[string]int{"progress": i}); err != nil {
						return nil, err
					}
				}
				return "done", nil
			})
			opts := &Options{Progress: dc.d}
			client, _ := newPair(t, nil, srv, opts, opts)
			for round := range 200 {
				var got []int // LSP's value, or MCP's params whole: {"progress": i, ...}
				ctx := WithProgress(testCtx(t, wait), func(v json.RawMessage) {
					var p struct{ Progress int }
					if err := json.Unmarshal(v, &p); err != nil {
						t.Errorf("progress %s: %v", v, err)
					}
					got = append(got, p.Progress)
				})
				var res string
				if err := client.Call(ctx, "work", map[string]any{"n": round}, &res); err != nil || res != "done" {
					t.Fatalf("round %d: %q, %v", round, res, err)
				}
				if len(got) != 20 {
					t.Fatalf("round %d: Call returned after %d of 20 progress reports", round, len(got))
				}
				for i, v := range got {
					if v != i {
						t.Fatalf("round %d: progress out of order: %v", round, got)
					}
				}
			}
		})
	}
}

// TestProgressWire: what goes on the wire, both ways, in both dialects.
func TestProgressWire(t *testing.T) {
	for _, tc := range []struct {
		name       string
		d          *ProgressDialect
		params     any
		wantParams string // with TOKEN for the token the Peer made
		progress   string // a progress notification's params, TOKEN for the token
		wantValue  string // what the caller's function receives
	}{
		{"LSP no params", LSPProgress, nil, `{"workDoneToken":TOKEN}`,
			`{"token":TOKEN,"value":{"kind":"report","percentage":50}}`, `{"kind":"report","percentage":50}`},
		{"LSP object params", LSPProgress, map[string]int{"a": 1}, `{"a":1,"workDoneToken":TOKEN}`,
			`{"value":[1,2],"token":TOKEN}`, `[1,2]`},
		{"LSP caller's token replaced", LSPProgress, json.RawMessage(`{"workDoneToken":"mine","b":2}`), `{"b":2,"workDoneToken":TOKEN}`,
			`{"token":TOKEN,"value":"x"}`, `"x"`},
		{"MCP no params", MCPProgress, nil, `{"_meta":{"progressToken":TOKEN}}`,
			`{"progressToken":TOKEN,"progress":1,"total":3,"message":"m"}`, `{"progressToken":TOKEN,"progress":1,"total":3,"message":"m"}`},
		{"MCP _meta kept", MCPProgress, json.RawMessage(`{"name":"t","_meta":{"k":true}}`), `{"name":"t","_meta":{"k":true,"progressToken":TOKEN}}`,
			`{"progress":2,"progressToken":TOKEN}`, `{"progress":2,"progressToken":TOKEN}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, r := newRaw(t, nil, &Options{Progress: tc.d})
			got := make(chan string, 10)
			ctx := WithProgress(testCtx(t, wait), func(v json.RawMessage) { got <- string(v) })
			res := make(chan error, 1)
			go func() { res <- p.Call(ctx, "m", tc.params, nil) }()
			req := parseWire(t, r.recv())
			work, _ := tc.d.Tokens(req.Params)
			if work.IsZero() {
				t.Fatalf("no token in %s", req.Params)
			}
			sub := func(s string) string { return strings.ReplaceAll(s, "TOKEN", work.raw) }
			assertJSON(t, req.Params, sub(tc.wantParams))
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`, tc.d.Method, sub(tc.progress)))
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":null}`, req.ID))
			if err := within(t, res, "Call"); err != nil {
				t.Fatal(err)
			}
			select {
			case v := <-got:
				assertJSON(t, []byte(v), sub(tc.wantValue))
			default:
				t.Fatal("Call returned before the progress reached its function")
			}
		})
	}
}

// TestProgressArrayParams: a Call that asks for progress with params that
// are an array fails at once, sending nothing; without progress they go.
func TestProgressArrayParams(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			p, r := newRaw(t, nil, &Options{Progress: dc.d})
			ctx := WithProgress(testCtx(t, wait), func(json.RawMessage) {})
			if err := p.Call(ctx, "m", []int{1}, nil); !errors.Is(err, ErrInvalidParams) {
				t.Fatalf("Call: %v, want ErrInvalidParams", err)
			}
			r.quiet(20 * time.Millisecond)
		})
	}
}

// TestReportProgressWire: the handler's side. With a token, each report is
// a notification in the dialect, written before the reply; without one,
// nothing is sent.
func TestReportProgressWire(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		want         []string // the messages before the reply
	}{
		{"LSP work done", `{"workDoneToken":7}`, []string{`{"jsonrpc":"2.0","method":"$/progress","params":{"token":7,"value":{"progress":1}}}`}},
		{"LSP partial", `{"partialResultToken":"p"}`, []string{`{"jsonrpc":"2.0","method":"$/progress","params":{"token":"p","value":["part"]}}`}},
		{"LSP both", `{"workDoneToken":"w","partialResultToken":"p"}`, []string{
			`{"jsonrpc":"2.0","method":"$/progress","params":{"token":"w","value":{"progress":1}}}`,
			`{"jsonrpc":"2.0","method":"$/progress","params":{"token":"p","value":["part"]}}`}},
		{"LSP no token", `{}`, nil},
		{"MCP", `{"_meta":{"progressToken":"t1"}}`, []string{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"progressToken":"t1"}}`}},
		{"MCP no token", `{"_meta":{}}`, nil},
		{"MCP array params", `[1]`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := LSPProgress
			if strings.HasPrefix(tc.name, "MCP") {
				d = MCPProgress
			}
			h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
				if err := ReportProgress(ctx, map[string]int{"progress": 1}); err != nil {
					return nil, err
				}
				return "ok", ReportPartialResult(ctx, []string{"part"})
			})
			_, r := newRaw(t, h, &Options{Progress: d})
			r.send(`{"jsonrpc":"2.0","id":1,"method":"m","params":` + tc.params + `}`)
			for _, w := range tc.want {
				assertJSON(t, r.recv(), w)
			}
			assertJSON(t, r.recv(), `{"jsonrpc":"2.0","id":1,"result":"ok"}`)
		})
	}
}

// TestReportProgressNoDialect: without Options.Progress, ReportProgress
// sends nothing, whatever the params hold.
func TestReportProgressNoDialect(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		return "ok", ReportProgress(ctx, 1)
	})
	_, r := newRaw(t, h, nil)
	assertJSON(t, r.call(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"workDoneToken":1}}`), `{"jsonrpc":"2.0","id":1,"result":"ok"}`)
	if err := ReportProgress(context.Background(), 1); err != nil {
		t.Fatalf("ReportProgress outside a handler: %v", err)
	}
}

// debugLogger logs at level Debug into buf, which the test reads.
func debugLogger(buf *testbin.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestProgressLateOrUnknownDropped: progress for one of our tokens after
// its reply is dropped (Debug); progress for a token we never made goes to
// the Handler like any notification (LSP's server-initiated progress), and
// with no handler for it is dropped as an unknown notification (Debug);
// neither gets a reply or reaches a function.
func TestProgressLateOrUnknownDropped(t *testing.T) {
	var logs testbin.Buffer
	foreign := make(chan string, 1)
	h := NewMux()
	RegisterNotification(h, "$/progress", func(ctx context.Context, p json.RawMessage) error {
		foreign <- string(p)
		return nil
	})
	p, r := newRaw(t, h, &Options{Progress: LSPProgress, Logger: debugLogger(&logs)})
	calls := 0
	ctx := WithProgress(testCtx(t, wait), func(json.RawMessage) { calls++ })
	res := make(chan error, 1)
	go func() { res <- p.Call(ctx, "m", nil, nil) }()
	req := parseWire(t, r.recv())
	work, _ := LSPProgress.Tokens(req.Params)
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":null}`, req.ID))
	if err := within(t, res, "Call"); err != nil {
		t.Fatal(err)
	}
	r.expectNoReply(fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/progress","params":{"token":%s,"value":1}}`, work.raw))
	if calls != 0 {
		t.Errorf("the function ran %d times for progress after the reply", calls)
	}
	if !strings.Contains(logs.String(), "level=DEBUG msg=\"jsonrpc: dropped progress for a call no longer awaited\"") {
		t.Errorf("no Debug line for the late progress:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "level=WARN") || strings.Contains(logs.String(), "level=INFO") {
		t.Errorf("late progress logged above Debug:\n%s", logs.String())
	}
	r.expectNoReply(`{"jsonrpc":"2.0","method":"$/progress","params":{"token":"theirs","value":2}}`)
	assertJSON(t, []byte(within(t, foreign, "foreign progress")), `{"token":"theirs","value":2}`)

	// No handler for it: an unknown notification, dropped at Debug.
	_, r2 := newRaw(t, nil, &Options{Progress: LSPProgress})
	r2.expectNoReply(`{"jsonrpc":"2.0","method":"$/progress","params":{"token":"theirs","value":2}}`)
}

// TestProgressFunctionCallsBack: a progress function that calls the other
// side, and makes the other side call back, works with one handler slot
// on each side: its ping waits for the slot the reporting handler holds
// until it returns, the reply waits for the function, and the read loop
// goes on routing replies meanwhile.
func TestProgressFunctionCallsBack(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			srv := NewMux()
			srv.HandleFunc("work", func(ctx context.Context, req *Request) (any, error) {
				for i := range 5 {
					if err := ReportProgress(ctx, map[string]int{"progress": i}); err != nil {
						return nil, err
					}
				}
				return "done", nil
			})
			srv.HandleFunc("ping", func(ctx context.Context, req *Request) (any, error) { return "pong", nil })
			cli := NewMux()
			cli.HandleFunc("echo", echo)
			opts := &Options{Progress: dc.d, MaxConcurrent: 1}
			client, server := newPair(t, cli, srv, opts, opts)
			ctx := testCtx(t, wait)
			n := 0
			pctx := WithProgress(ctx, func(json.RawMessage) {
				var s string
				// To the server, whose only slot the reporting handler
				// holds (it waits to write its next report) ...
				if err := client.Call(ctx, "ping", nil, &s); err != nil || s != "pong" {
					t.Errorf("callback from the progress function: %q, %v", s, err)
				}
				// ... and through it back to us.
				if err := server.Call(ctx, "echo", []int{n}, nil); err != nil {
					t.Errorf("server calls the client during progress: %v", err)
				}
				n++
			})
			var res string
			if err := client.Call(pctx, "work", nil, &res); err != nil || res != "done" || n != 5 {
				t.Fatalf("Call: %q, %v after %d progress functions", res, err, n)
			}
		})
	}
}

// TestProgressOverBudget: progress that arrives faster than the caller's
// function takes it, past MaxQueuedBytes, fails that call at once with
// ErrOverloaded and cancels it; the read loop never waits for the
// function, the late reply is dropped, and the Peer serves on.
func TestProgressOverBudget(t *testing.T) {
	var logs testbin.Buffer
	p, r := newRaw(t, nil, &Options{Progress: LSPProgress, Cancel: LSPCancel, MaxQueuedBytes: 4096, Logger: debugLogger(&logs)})
	release := make(chan struct{})
	seen := 0
	ctx := WithProgress(testCtx(t, wait), func(json.RawMessage) {
		if seen++; seen == 1 {
			<-release // the function is slow: the progress piles up
		}
	})
	res := make(chan error, 1)
	go func() { res <- p.Call(ctx, "m", nil, nil) }()
	req := parseWire(t, r.recv())
	work, _ := LSPProgress.Tokens(req.Params)
	value := strings.Repeat("x", 100)
	for range 60 { // 60 × (100+64) bytes, over 4096: the read loop must not block
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/progress","params":{"token":%s,"value":%q}}`, work.raw, value))
	}
	r.sync()
	c := parseWire(t, r.recv()) // the cancel, sent by the read loop
	if c.Method != "$/cancelRequest" || !strings.Contains(string(c.Params), string(req.ID)) {
		t.Fatalf("want the call cancelled, got %+v", c)
	}
	close(release)
	if err := within(t, res, "Call"); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("Call: %v, want ErrOverloaded", err)
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":null}`, req.ID)) // late: dropped
	if n := p.pending.progressHeld(); n != 0 {
		t.Errorf("%d bytes of progress still held after the call failed", n)
	}
	// The Peer serves on: a new call gets its progress and reply.
	res2 := make(chan error, 1)
	got := 0
	go func() {
		res2 <- p.Call(WithProgress(testCtx(t, wait), func(json.RawMessage) { got++ }), "m2", nil, nil)
	}()
	req2 := parseWire(t, r.recv())
	work2, _ := LSPProgress.Tokens(req2.Params)
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/progress","params":{"token":%s,"value":1}}`, work2.raw))
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":null}`, req2.ID))
	if err := within(t, res2, "second Call"); err != nil || got != 1 {
		t.Fatalf("second Call: %v, %d progress", err, got)
	}
}

// TestPartialResults: LSP's partial results reach their own function, and
// work-done progress its own, interleaved in arrival order, all before
// Call returns.
func TestPartialResults(t *testing.T) {
	srv := NewMux()
	srv.HandleFunc("symbols", func(ctx context.Context, req *Request) (any, error) {
		ReportProgress(ctx, map[string]string{"kind": "begin", "title": "listing"})
		for i := range 10 {
			if err := ReportPartialResult(ctx, []int{i}); err != nil {
				return nil, err
			}
		}
		ReportProgress(ctx, map[string]string{"kind": "end"})
		return []int{}, nil
	})
	opts := &Options{Progress: LSPProgress}
	client, _ := newPair(t, nil, srv, opts, opts)
	var events []string
	ctx := WithProgress(testCtx(t, wait), func(v json.RawMessage) { events = append(events, "work "+string(v)) })
	ctx = WithPartialResults(ctx, func(v json.RawMessage) { events = append(events, "part "+string(v)) })
	if err := client.Call(ctx, "symbols", nil, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{`work {"kind":"begin","title":"listing"}`}
	for i := range 10 {
		want = append(want, fmt.Sprintf("part [%d]", i))
	}
	want = append(want, `work {"kind":"end"}`)
	if fmt.Sprint(events) != fmt.Sprint(want) {
		t.Fatalf("got  %q\nwant %q", events, want)
	}
}

// TestStartProgress: a handler whose caller gave no token starts progress
// itself in LSP's way, window/workDoneProgress/create, then reports
// against the token it created; with the caller's token it creates none.
func TestStartProgress(t *testing.T) {
	h := HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		ctx, err := StartProgress(ctx)
		if err != nil {
			return nil, err
		}
		return "ok", ReportProgress(ctx, map[string]string{"kind": "begin"})
	})
	_, r := newRaw(t, h, &Options{Progress: LSPProgress})
	r.send(`{"jsonrpc":"2.0","id":1,"method":"m"}`)
	create := parseWire(t, r.recv())
	if create.Method != "window/workDoneProgress/create" || create.ID == nil {
		t.Fatalf("want a create call, got %+v", create)
	}
	token := rawMember(t, create.Params, "token")
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":null}`, create.ID))
	assertJSON(t, r.recv(), fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/progress","params":{"token":%s,"value":{"kind":"begin"}}}`, token))
	assertJSON(t, r.recv(), `{"jsonrpc":"2.0","id":1,"result":"ok"}`)

	r.send(`{"jsonrpc":"2.0","id":2,"method":"m","params":{"workDoneToken":"given"}}`)
	assertJSON(t, r.recv(), `{"jsonrpc":"2.0","method":"$/progress","params":{"token":"given","value":{"kind":"begin"}}}`)
	assertJSON(t, r.recv(), `{"jsonrpc":"2.0","id":2,"result":"ok"}`)
}
