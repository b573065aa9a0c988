//go:build unix

package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// slowStore is a Memory whose history takes slowFor to read for topics
// named slow-*: a busy server, a JetStream catch-up.
type slowStore struct{ topic.Memory }

const slowFor = 400 * time.Millisecond

func (s *slowStore) Open(ctx context.Context, name string, deliver func(topic.Position, json.RawMessage)) (topic.Log, error) {
	l, err := s.Memory.Open(ctx, name, deliver)
	return slowLog{Log: l, slow: strings.HasPrefix(name, "slow-")}, err
}

type slowLog struct {
	topic.Log
	slow bool
}

func (l slowLog) Since(ctx context.Context, since *topic.Position, limit topic.Limit) (topic.History, error) {
	if l.slow {
		select {
		case <-time.After(slowFor):
		case <-ctx.Done():
		}
	}
	return l.Log.Since(ctx, since, limit)
}

// TestNodeReviewUnsubscribeOverlap runs test/review_topics.test.mjs
// against package topic's Hub over a slow history (REVIEW_BASE): what
// jsonrpc.js's unsubscribes leave on the server when they overlap a
// subscribe of the same topic (the Hub makes such an unsubscribe a
// no-op, and its doc says jsonrpc.js never sends one).
func TestNodeReviewUnsubscribeOverlap(t *testing.T) {
	hub := &topic.Hub{Allow: topic.AllowAll, Store: &slowStore{}}
	mux := jsonrpc.NewMux()
	hub.Register(mux)
	var mu sync.Mutex
	peers := map[*jsonrpc.Peer]bool{}
	srv := &ws.Server{
		Peer: jsonrpc.Options{Handler: mux, Cancel: jsonrpc.LSPCancel},
		OnConnect: func(p *jsonrpc.Peer, _ *http.Request) {
			mu.Lock()
			peers[p] = true
			mu.Unlock()
		},
		OnDisconnect: func(p *jsonrpc.Peer, _ error) {
			mu.Lock()
			delete(peers, p)
			mu.Unlock()
		},
	}
	hmux := http.NewServeMux()
	hmux.Handle("/rpc", srv)
	hmux.HandleFunc("POST /control/publish", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		pos, err := hub.Publish(r.Context(), r.URL.Query().Get("topic"), json.RawMessage(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, pos.Seq)
	})
	hmux.HandleFunc("GET /control/subscribers", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, hub.Subscribers(r.URL.Query().Get("topic")))
	})
	hmux.HandleFunc("POST /control/drop", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		var all []*jsonrpc.Peer
		for p := range peers {
			all = append(all, p)
		}
		mu.Unlock()
		for _, p := range all {
			p.Close()
		}
		fmt.Fprint(w, len(all))
	})
	hs := httptest.NewServer(hmux)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("ws.Server.Shutdown: %v", err)
		}
		hs.Close()
		hub.Close()
	}()
	runNode(t, 60*time.Second, []string{"REVIEW_BASE=" + hs.URL},
		"--experimental-websocket", "--test", "--test-reporter=spec", "--test-timeout=30000", "review_topics.test.mjs")
}
