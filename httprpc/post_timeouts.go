package httprpc

import (
	"net/http"
	"time"
)

// The timeouts NewHTTPServer sets.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	idleTimeout       = 120 * time.Second
)

// NewHTTPServer returns an http.Server for addr serving h, with the
// timeouts that plain JSON-RPC over HTTP wants against slow or idle
// clients:
//
//   - ReadHeaderTimeout 10 s: a client that sends its headers a byte at a
//     time (slowloris) is cut off;
//   - ReadTimeout 30 s, for the whole request, body included: a body
//     trickled in is cut off there (the Server answers 400, to nobody)
//     and its MaxRequests slot is freed;
//   - IdleTimeout 120 s: a keep-alive connection waits that long for its
//     next request.
//
// It sets
// no WriteTimeout, which would cut off handlers that take longer (a
// handler runs until it returns or the client goes away), and keeps the
// default MaxHeaderBytes (1 MiB). An http.Server of your own should set at
// least ReadHeaderTimeout and ReadTimeout: without them a client that
// sends its headers or its body slowly holds a connection, and a Server
// slot, for as long as it likes.
//
//	hs := httprpc.NewHTTPServer("127.0.0.1:8080", &httprpc.Server{Peer: jsonrpc.Options{Handler: mux}})
//	err := hs.ListenAndServe()
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
	}
}
