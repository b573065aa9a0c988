//go:build !js

package ws_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

// A server on an http.ServeMux (here an httptest server on loopback) and a
// client that dials it.
func ExampleServer() {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "add", func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil })
	srv := &ws.Server{Peer: jsonrpc.Options{Handler: mux}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	peer, err := ws.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer peer.Wait()
	defer peer.Close()
	var sum int
	err = peer.Call(ctx, "add", [2]int{2, 40}, &sum)
	fmt.Println(sum, err)
	// Output: 42 <nil>
}

// A Client outlives its connections: it dials again whenever the
// connection ends, and OnConnect runs on every connection before calls
// flow on it.
func ExampleNewClient() {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "hello", func(_ context.Context, p []string) (string, error) { return "hello, " + p[0], nil })
	srv := &ws.Server{Peer: jsonrpc.Options{Handler: mux}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Shutdown(context.Background())

	c := ws.NewClient("ws"+strings.TrimPrefix(hs.URL, "http"), ws.ClientOptions{
		OnConnect: func(ctx context.Context, p *jsonrpc.Peer) error {
			fmt.Println("connected") // authenticate, re-subscribe here
			return nil
		},
	})
	defer c.Close()
	var greeting string
	err := c.CallIdempotent(context.Background(), "hello", []string{"world"}, &greeting)
	fmt.Println(greeting, err, c.State())
	// Output:
	// connected
	// hello, world <nil> connected
}

// Prepare runs before every attempt of a Client and may put fresh
// credentials in its upgrade request: here a token from a sign-in, which a
// server that restarted would have forgotten.
func ExampleClientOptions_prepare() {
	var tokens sync.Map // what this server's sign-in has issued
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "hello", func(_ context.Context, p []string) (string, error) { return "hello, " + p[0], nil })
	srv := &ws.Server{Peer: jsonrpc.Options{Handler: mux}}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := tokens.Load(r.Header.Get("Authorization")); !ok {
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	defer srv.Shutdown(context.Background())
	signIn := func(context.Context) (string, error) { // a POST /login, say
		tokens.Store("Bearer t1", true)
		return "t1", nil
	}

	c := ws.NewClient("ws"+strings.TrimPrefix(hs.URL, "http"), ws.ClientOptions{
		Prepare: func(ctx context.Context, a *ws.Attempt) error {
			fmt.Println("signing in; failed attempts so far:", a.Failed)
			token, err := signIn(ctx)
			a.Header.Set("Authorization", "Bearer "+token)
			return err
		},
	})
	defer c.Close()
	var greeting string
	err := c.Call(context.Background(), "hello", []string{"bot"}, &greeting)
	fmt.Println(greeting, err)
	// Output:
	// signing in; failed attempts so far: 0
	// hello, bot <nil>
}

// A Client pointed at a path nothing serves gives up at once: its calls,
// and Err, return the server's refusal, a *StatusError.
func ExampleStatusError() {
	hs := httptest.NewServer(http.NotFoundHandler())
	defer hs.Close()

	c := ws.NewClient("ws" + strings.TrimPrefix(hs.URL, "http") + "/wrong")
	defer c.Close()
	err := c.Call(context.Background(), "hello", nil, nil)
	var se *ws.StatusError
	if errors.As(err, &se) {
		fmt.Println(se.Code, errors.Is(err, ws.ErrGaveUp))
	}
	<-c.Done()
	fmt.Println(c.State(), errors.Is(c.Err(), ws.ErrGaveUp))
	// Output:
	// 404 true
	// closed true
}

// A Server runs the OnConnect of its Peer options, the hook every
// transport runs, and then its own, which sees the upgrade request; its
// handlers see the request's context values over those of the Peer
// options' BaseContext.
func ExampleServer_hooks() {
	type key string
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "whoami", func(ctx context.Context, _ struct{}) (string, error) {
		return fmt.Sprint(ctx.Value(key("app")), ", ", ctx.Value(key("user"))), nil
	})
	connected := make(chan struct{})
	srv := &ws.Server{
		Peer: jsonrpc.Options{
			Handler:     mux,
			BaseContext: context.WithValue(context.Background(), key("app"), "board"),
			OnConnect:   func(*jsonrpc.Peer) { fmt.Println("Peer.OnConnect") },
		},
		OnConnect: func(_ *jsonrpc.Peer, r *http.Request) {
			fmt.Println("Server.OnConnect", r.URL.Path)
			close(connected)
		},
	}
	auth := func(w http.ResponseWriter, r *http.Request) { // middleware
		srv.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), key("user"), "ada")))
	}
	hs := httptest.NewServer(http.HandlerFunc(auth))
	defer hs.Close()
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	peer, err := ws.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/rpc")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer peer.Wait()
	defer peer.Close()
	<-connected
	var who string
	err = peer.Call(ctx, "whoami", nil, &who)
	fmt.Println(who, err)
	// Output:
	// Peer.OnConnect
	// Server.OnConnect /rpc
	// board, ada <nil>
}
