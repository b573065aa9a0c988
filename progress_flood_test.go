package jsonrpc_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
)

// TestTenThousandProgressBeforeReply: 10,000 progress notifications for one
// call all reach the caller's function, in order, before Call returns,
// over every transport, in both dialects.
func TestTenThousandProgressBeforeReply(t *testing.T) {
	const n = 10000
	transports := []struct {
		name string
		pair func(*testing.T, jsonrpc.Handler, jsonrpc.Handler, jsonrpc.Options) (*jsonrpc.Peer, *jsonrpc.Peer)
	}{
		{"pipe", pipePair},
		{"stdio-header", func(t *testing.T, ha, hb jsonrpc.Handler, o jsonrpc.Options) (*jsonrpc.Peer, *jsonrpc.Peer) {
			return stdioFramedPair(t, ha, hb, o, stdio.Header)
		}},
		{"stdio-line", stdioTCPPair},
		{"ws", wsPair},
	}
	for _, tr := range transports {
		for _, d := range []struct {
			name string
			d    *jsonrpc.ProgressDialect
		}{{"LSP", jsonrpc.LSPProgress}, {"MCP", jsonrpc.MCPProgress}} {
			t.Run(tr.name+"/"+d.name, func(t *testing.T) {
				srv := jsonrpc.NewMux()
				srv.HandleFunc("work", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
					for i := range n {
						if err := jsonrpc.ReportProgress(ctx, map[string]int{"progress": i}); err != nil {
							return nil, err
						}
					}
					return "done", nil
				})
				client, _ := tr.pair(t, nil, srv, jsonrpc.Options{Progress: d.d})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				next := 0
				ctx = jsonrpc.WithProgress(ctx, func(v json.RawMessage) {
					var p struct{ Progress int }
					if err := json.Unmarshal(v, &p); err != nil || p.Progress != next {
						t.Errorf("progress %s (%v), want %d", v, err, next)
					}
					next++
				})
				var res string
				if err := client.Call(ctx, "work", map[string]any{}, &res); err != nil || res != "done" {
					t.Fatalf("Call = %q, %v", res, err)
				}
				if next != n {
					t.Fatalf("Call returned after %d of %d progress notifications", next, n)
				}
			})
		}
	}
}
