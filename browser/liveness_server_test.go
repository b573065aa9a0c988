package browser_test

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// serveLiveness adds /pushback to mux, for test/liveness.test.mjs:
// JSON-RPC over WebSocket whose Peer holds at most 64 KiB of inbound
// requests, so that a page that sends notifications faster than their
// handler (slow.note, which sleeps params.ms) takes them is pushed back:
// the server reads nothing until the handler catches up. It answers echo.
// Each connection's end is reported to /control/outcome?tag=, the tag
// being the upgrade request's ?tag=: "clean" when its cause was nil
// (OnDisconnect's), else the cause.
func (s *testServer) serveLiveness(mux *http.ServeMux) {
	m := jsonrpc.NewMux()
	m.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) { return r.Params, nil })
	type noteParams struct {
		Ms int `json:"ms"`
	}
	jsonrpc.RegisterNotification(m, "slow.note", func(ctx context.Context, p noteParams) error {
		select {
		case <-time.After(time.Duration(min(p.Ms, 1000)) * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	})
	var tags sync.Map // *jsonrpc.Peer -> its tag
	srv := &ws.Server{
		Peer:      jsonrpc.Options{Handler: m, MaxQueuedBytes: 64 << 10},
		OnConnect: func(p *jsonrpc.Peer, r *http.Request) { tags.Store(p, r.URL.Query().Get("tag")) },
		OnDisconnect: func(p *jsonrpc.Peer, cause error) {
			tag, _ := tags.LoadAndDelete(p)
			outcome := "clean"
			if cause != nil {
				outcome = cause.Error()
			}
			select {
			case s.outcomeChan(tag.(string)) <- outcome:
			default: // an earlier outcome of the tag nobody asked for
			}
		},
	}
	s.servers = append(s.servers, srv)
	mux.Handle("/pushback", srv)
}
