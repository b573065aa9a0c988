package browser_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/browser"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// testServer is what the JavaScript tests talk to: JSON-RPC over
// WebSocket at /rpc (cancel dialect LSP), /mcp (MCP) and /plain (none),
// with the test-only topic hub, and at /real with package topic's Hub (a
// Memory history of about 8 small messages),
// the package's files at /js/, a blank page at /, and /control/, plain
// HTTP the tests use to act on the server from outside the page (publish,
// forget a topic's history, drop every connection, refuse new ones): it
// keeps working while the page is offline.
type testServer struct {
	hub      hub        // the test-only hub (hub_test.go), at /rpc, /mcp and /plain
	real     *topic.Hub // package topic's, at /real
	refusing atomic.Bool

	mu       sync.Mutex
	peers    map[*jsonrpc.Peer]bool
	outcomes map[string]chan string // sleep's tag -> "cancelled" | "completed"

	servers []*ws.Server
	hs      *httptest.Server
}

// startTestServer serves on 127.0.0.1 until the test ends.
func startTestServer(t *testing.T) *testServer {
	s := &testServer{peers: map[*jsonrpc.Peer]bool{}, outcomes: map[string]chan string{}}
	s.real = &topic.Hub{
		Store: &topic.Memory{MaxBytes: historyLimit * (64 + 2)}, // 64 bytes a message besides its data
		Allow: func(_ context.Context, name string) error {
			if strings.HasPrefix(name, "forbidden") {
				return jsonrpc.NewError(CodeNoSuchTopic, "no such topic", map[string]string{"topic": name})
			}
			return nil
		},
		// Presence on the topics "presence-*", by the user the page
		// names in the URL's query (?user=): a test stand-in for sign-in.
		Identity: func(ctx context.Context) string { u, _ := ctx.Value(userKey{}).(string); return u },
		Presence: func(name string) bool { return strings.HasPrefix(name, "presence-") },
	}
	mux := http.NewServeMux()
	for path, cancel := range map[string]*jsonrpc.CancelDialect{"/rpc": jsonrpc.LSPCancel, "/mcp": jsonrpc.MCPCancel, "/plain": nil, "/real": jsonrpc.LSPCancel} {
		srv := &ws.Server{
			Peer:         jsonrpc.Options{Handler: s.mux(path == "/real"), Cancel: cancel},
			OnConnect:    func(p *jsonrpc.Peer, _ *http.Request) { s.track(p, true) },
			OnDisconnect: func(p *jsonrpc.Peer, _ error) { s.track(p, false) },
		}
		s.servers = append(s.servers, srv)
		mux.Handle(path, s.unlessRefusing(srv))
	}
	s.serveLiveness(mux)
	mux.Handle("/js/", http.StripPrefix("/js/", browser.Handler()))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "<!doctype html><title>jsonrpc.js test page</title><p>test page</p>")
	})
	mux.HandleFunc("POST /control/publish", s.publish)
	mux.HandleFunc("POST /control/forget", func(w http.ResponseWriter, r *http.Request) {
		s.hub.forget(r.URL.Query().Get("topic"))
	})
	mux.HandleFunc("POST /control/drop", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, s.dropAll())
	})
	mux.HandleFunc("POST /control/refuse", func(w http.ResponseWriter, r *http.Request) {
		s.refusing.Store(r.URL.Query().Get("on") == "1")
	})
	mux.HandleFunc("GET /control/outcome", s.outcome)
	s.hs = httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, srv := range s.servers {
			if err := srv.Shutdown(ctx); err != nil {
				t.Errorf("ws.Server.Shutdown: %v", err)
			}
		}
		s.hs.Close()
		s.real.Close()
	})
	return s
}

// mux serves the methods the tests call:
//   - echo: its params back;
//   - fail: error -32050 "refused" with data {"why": "test"};
//   - sleep {ms, tag}: returns after ms, or when its ctx ends; /control/outcome?tag= says which;
//   - callPage {method, params, timeoutMs}: calls the page back and returns its result or error;
//   - topic.subscribe, topic.unsubscribe: the test hub, or package topic's
//     Hub if real.
func (s *testServer) mux(real bool) *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	m.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) { return r.Params, nil })
	m.HandleFunc("fail", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, jsonrpc.NewError(-32050, "refused", map[string]string{"why": "test"})
	})
	type sleepParams struct {
		Ms  int    `json:"ms"`
		Tag string `json:"tag"`
	}
	jsonrpc.Register(m, "sleep", func(ctx context.Context, p sleepParams) (int, error) {
		ch := s.outcomeChan(p.Tag)
		select {
		case <-time.After(time.Duration(p.Ms) * time.Millisecond):
			ch <- "completed"
			return p.Ms, nil
		case <-ctx.Done():
			ch <- "cancelled"
			return 0, ctx.Err()
		}
	})
	type callPageParams struct {
		Method    string          `json:"method"`
		Params    json.RawMessage `json:"params"`
		TimeoutMs int             `json:"timeoutMs"`
	}
	jsonrpc.Register(m, "callPage", func(ctx context.Context, p callPageParams) (json.RawMessage, error) {
		if p.TimeoutMs > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(p.TimeoutMs)*time.Millisecond)
			defer cancel()
		}
		var params any
		if p.Params != nil {
			params = p.Params
		}
		var result json.RawMessage
		err := jsonrpc.PeerFromContext(ctx).Call(ctx, p.Method, params, &result)
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return nil, jsonrpc.Forward(rpcErr) // the page's error, as it sent it
		}
		if err != nil {
			return nil, jsonrpc.NewError(-32099, "calling the page failed: "+err.Error(), nil)
		}
		return result, nil
	})
	if real {
		s.real.Register(m)
	} else {
		s.hub.register(m)
	}
	return m
}

func (s *testServer) track(p *jsonrpc.Peer, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.peers[p] = true
		return
	}
	delete(s.peers, p)
	s.hub.leave(p)
}

// dropAll closes every connection from the server's side; it returns how
// many there were.
func (s *testServer) dropAll() int {
	s.mu.Lock()
	peers := make([]*jsonrpc.Peer, 0, len(s.peers))
	for p := range s.peers {
		peers = append(peers, p)
	}
	s.mu.Unlock()
	for _, p := range peers {
		p.Close()
	}
	return len(peers)
}

func (s *testServer) unlessRefusing(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.refusing.Load() {
			http.Error(w, "refusing connections (test)", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, r.URL.Query().Get("user"))))
	})
}

// userKey is the ctx key of the user a page names (?user=).
type userKey struct{}

// publish: POST /control/publish?topic=T[&quiet=1][&real=1] with the
// message's JSON as the body; answers the message's seq. real publishes
// on package topic's Hub (quiet is the test hub's only).
func (s *testServer) publish(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || !json.Valid(body) {
		http.Error(w, "the body must be JSON", http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	if q.Get("real") == "1" {
		pos, err := s.real.Publish(r.Context(), q.Get("topic"), json.RawMessage(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, pos.Seq)
		return
	}
	fmt.Fprint(w, s.hub.publish(q.Get("topic"), body, q.Get("quiet") == "1"))
}

func (s *testServer) outcomeChan(tag string) chan string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.outcomes[tag]
	if ch == nil {
		ch = make(chan string, 1)
		s.outcomes[tag] = ch
	}
	return ch
}

// outcome: GET /control/outcome?tag=X waits up to 5 s for sleep's
// outcome with that tag and answers it, or "none".
func (s *testServer) outcome(w http.ResponseWriter, r *http.Request) {
	select {
	case o := <-s.outcomeChan(r.URL.Query().Get("tag")):
		io.WriteString(w, o)
	case <-time.After(5 * time.Second):
		io.WriteString(w, "none")
	case <-r.Context().Done():
	}
}
