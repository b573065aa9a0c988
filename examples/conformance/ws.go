package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/peerwire/jsonrpc/ws"
)

// serveWS serves the conformance methods over WebSocket on addr, one
// JSON-RPC message per text frame, at any path. It prints the ws:// URL as
// the first line of stdout, then serves until SIGINT or SIGTERM, or until
// its standard input closes when that is a pipe (with stdin on /dev/null or
// a terminal, only a signal stops it). Calls in flight then get up to 1 s
// to finish, as on stdio. origins lists the other origins
// allowed to connect; by default only same-origin browsers may.
func serveWS(addr string, origins []string, stdout io.Writer, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &ws.Server{
		Peer:           peerOptions(log),
		OriginPatterns: origins,
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "ws://%s/\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stdinClosed := make(chan struct{})
	if watchStdin() {
		go func() { // ends with the process: a blocking read cannot be stopped
			io.Copy(io.Discard, os.Stdin)
			close(stdinClosed)
		}()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	case <-stdinClosed:
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	err = hs.Shutdown(sctx)
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

// watchStdin reports whether standard input is a pipe or socket, whose
// closing means the parent wants the server gone.
func watchStdin() bool {
	fi, err := os.Stdin.Stat()
	return err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}
