// Command httpdemo serves JSON-RPC 2.0 over plain HTTP POST with
// httprpc.Server, for curl, shell scripts, webhooks and health checks:
//
//	go run ./examples/httpdemo                 # listens on 127.0.0.1:8080
//	curl -s -H 'Content-Type: application/json' \
//	  -d '{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]}' http://127.0.0.1:8080/rpc
//
// It serves add ([a, b] → a+b), whoami (the user of the request's bearer
// token, put in the request's context by HTTP middleware, as a login
// would), fail (an application error with data) and log (a notification).
// The curl commands of httprpc/README.md run against it in TestCurl.
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
	hs := httprpc.NewHTTPServer(*addr, newHandler(log.Default()))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	log.Printf("httpdemo: JSON-RPC over POST on http://%s/rpc", *addr)
	if err := hs.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

type userKey struct{}

// newHandler serves the methods on /rpc, behind middleware that puts the
// bearer token's user (anyone, here) in the request's context.
func newHandler(logger *log.Logger) http.Handler {
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
	rpc := &httprpc.Server{Peer: jsonrpc.Options{Handler: mux}}
	h := http.NewServeMux()
	h.Handle("/rpc", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && u != "" {
			r = r.WithContext(context.WithValue(r.Context(), userKey{}, u))
		}
		rpc.ServeHTTP(w, r)
	}))
	return h
}
