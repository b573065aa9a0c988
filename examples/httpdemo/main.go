// Command httpdemo serves JSON-RPC 2.0 over plain HTTP POST with
// httprpc.Server, for curl, shell scripts, webhooks and health checks:
//
//	go run ./examples/httpdemo                 # listens on 127.0.0.1:8080
//	curl -s -H 'Content-Type: application/json' \
//	  -d '{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}' http://127.0.0.1:8080/rpc
//
// It serves add ([a, b] → a+b), whoami (the user of the request's bearer
// token, put in the request's context by HTTP middleware, as a login
// would), fail (an application error with data) and log (a notification)
// on /rpc; and the same methods, with countdown ([n]: n tick notifications sent
// while the call runs, then "liftoff"), over MCP's Streamable HTTP
// transport on /mcp (httprpc.SessionServer), where a handler can send to
// its client. The curl commands of httprpc/README.md run against it in
// TestCurl.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	log.SetFlags(0)
	h, sessions := newHandler(log.Default())
	hs := httprpc.NewHTTPServer(*addr, h)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sessions.Shutdown(sctx) // first: its event streams are requests hs would wait for
		_ = hs.Shutdown(sctx)
	}()
	log.Printf("httpdemo: JSON-RPC over POST on http://%s/rpc, Streamable HTTP sessions on http://%s/mcp", *addr, *addr)
	if err := hs.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

type userKey struct{}

// newHandler serves the methods on /rpc, behind middleware that puts the
// bearer token's user (anyone, here) in the request's context, and over
// sessions on /mcp; the caller shuts the sessions down.
func newHandler(logger *log.Logger) (http.Handler, *httprpc.SessionServer) {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "add", func(_ context.Context, p [2]int) (int, error) {
		return p[0] + p[1], nil
	})
	jsonrpc.Register(mux, "whoami", func(ctx context.Context, _ struct{}) (string, error) {
		u, ok := ctx.Value(userKey{}).(string)
		if !ok {
			return "", jsonrpc.NewError(-32001, "not signed in", map[string]string{"hint": "send Authorization: Bearer NAME"})
		}
		return u, nil
	})
	jsonrpc.Register(mux, "fail", func(context.Context, struct{}) (any, error) {
		return nil, jsonrpc.NewError(-32002, "failed on purpose", map[string]int{"attempt": 1})
	})
	jsonrpc.RegisterNotification(mux, "log", func(_ context.Context, p []string) error {
		logger.Printf("httpdemo: log %q", p)
		return nil
	})
	// Over a session, a handler can send to its client: the ticks go on
	// the event stream of the POST that carried the call, before its
	// reply. (Over plain POST, Notify fails with httprpc.ErrNoCallbacks.)
	jsonrpc.Register(mux, "countdown", func(ctx context.Context, p [1]int) (string, error) {
		for i := min(p[0], 10); i > 0; i-- {
			if err := jsonrpc.PeerFromContext(ctx).Notify(ctx, "tick", []int{i}); err != nil {
				return "", err
			}
		}
		return "liftoff", nil
	})
	rpc := &httprpc.Server{Peer: jsonrpc.Options{Handler: mux}}
	// A session starts with countdown here (MCP's start with initialize,
	// the default).
	sessions := &httprpc.SessionServer{Peer: jsonrpc.Options{Handler: mux}, StartMethods: []string{"countdown"}}
	h := http.NewServeMux()
	h.Handle("/mcp", sessions)
	h.Handle("/rpc", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && u != "" {
			r = r.WithContext(context.WithValue(r.Context(), userKey{}, u))
		}
		rpc.ServeHTTP(w, r)
	}))
	return h, sessions
}
