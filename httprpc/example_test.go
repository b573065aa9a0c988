package httprpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// A Server serves a Mux over plain POST; a Client calls it.
func Example() {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "add", func(ctx context.Context, p [2]int) (int, error) {
		return p[0] + p[1], nil
	})
	hs := httptest.NewServer(&httprpc.Server{Peer: jsonrpc.Options{Handler: mux}})
	defer hs.Close()

	c := httprpc.NewClient(hs.URL)
	var sum int
	if err := c.Call(context.Background(), "add", []int{1, 2}, &sum); err != nil {
		fmt.Println(err)
	}
	fmt.Println(sum)
	// Output: 3
}

// Any HTTP client speaks to a Server: here net/http posts a batch, whose
// notification gets no element in the reply.
func ExampleServer() {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "add", func(ctx context.Context, p [2]int) (int, error) {
		return p[0] + p[1], nil
	})
	jsonrpc.RegisterNotification(mux, "log", func(ctx context.Context, p []string) error { return nil })
	hs := httptest.NewServer(&httprpc.Server{Peer: jsonrpc.Options{Handler: mux}})
	defer hs.Close()

	body := `[{"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]},{"jsonrpc":"2.0","method":"log","params":["hi"]}]`
	resp, err := http.Post(hs.URL, "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(reply))
	// Output: 200 [{"jsonrpc":"2.0","id":1,"result":3}]
}

// A status other than 2xx is a *StatusError: here middleware refuses a
// request without a token before it reaches the Server.
func ExampleStatusError() {
	srv := &httprpc.Server{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer hs.Close()

	err := httprpc.NewClient(hs.URL).Call(context.Background(), "add", []int{1, 2}, nil)
	var se *httprpc.StatusError
	if errors.As(err, &se) {
		fmt.Println(se.Code, strings.TrimSpace(string(se.Body)))
	}
	// Output: 401 sign in first
}

// NewHTTPServer sets the read timeouts that bound slow clients.
func ExampleNewHTTPServer() {
	hs := httprpc.NewHTTPServer("127.0.0.1:8080", &httprpc.Server{Peer: jsonrpc.Options{Handler: jsonrpc.NewMux()}})
	fmt.Println(hs.ReadHeaderTimeout, hs.ReadTimeout, hs.IdleTimeout, hs.WriteTimeout)
	// Output: 10s 30s 2m0s 0s
}
