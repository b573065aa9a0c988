package cluster_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/topic"
)

// stateHook is a Hook that, on an append, writes the trace context the
// otel module's ClusterHook writes for a ctx whose tracestate a client
// chose (TestRemoteTraceStateNotRelayedToSubscribers in otel: 32 valid
// members, 16,415 bytes, carried from a call's params._meta to the ctx
// the handler publishes with).
type stateHook struct{ tracestate string }

func (h stateHook) Start(ctx context.Context, op, _, _ string, header map[string][]string) (context.Context, func(error)) {
	if op == cluster.OpAppend {
		header["traceparent"] = []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
		header["tracestate"] = []string{h.tracestate}
	}
	return ctx, func(error) {}
}

func (stateHook) Params(_ context.Context, p json.RawMessage) json.RawMessage { return p }

// TestHistoryHookHeadersDoNotEvictHistory: the headers a HistoryStore's
// Hook adds to each stream message count against the stream's MaxBytes,
// which the Hub's history budget is set to; a client whose trace context
// carries a 16 KB tracestate makes each message it causes cost 16 KB of
// the topic's history, so that a few publishes of one byte of data evict
// everyone's history. The hook's headers must not be able to take the
// history's place (bounded, or not stored with the message).
func TestHistoryHookHeadersDoNotEvictHistory(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	var members []string
	for i := 0; i < 32; i++ {
		members = append(members, "k"+strings.Repeat("k", 253)+"="+strings.Repeat("v", 256))
	}
	const maxBytes = 64 << 10
	st, err := cluster.NewHistoryStore(connect(t, ns.ClientURL()), cluster.HistoryOptions{
		Hook: stateHook{tracestate: strings.Join(members, ",")}, Memory: true, MaxBytes: maxBytes,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, wait)
	log, err := st.Open(ctx, "board", func(topic.Position, json.RawMessage) {})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	const n = 40 // 40 messages of data 1: well within 64 KiB without headers
	for i := 0; i < n; i++ {
		if _, err := log.Append(ctx, json.RawMessage(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	h, err := log.Tail(ctx, n, topic.Limit{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages) != n {
		t.Errorf("the topic's history (MaxBytes %d) keeps %d of %d one-byte messages whose appends carried a %d-byte tracestate header",
			maxBytes, len(h.Messages), n, len(strings.Join(members, ",")))
	}
}
