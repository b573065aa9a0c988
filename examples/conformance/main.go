// Command conformance is the interop contract of this module: a JSON-RPC 2.0
// server with a fixed set of methods (see methods.go) that black-box suites
// drive over a transport.
//
// Run it over its standard input and output:
//
//	go run ./examples/conformance -transport stdio -framing header
//	go run ./examples/conformance -framing line
//
// or over WebSocket, one message per text frame, printing its ws:// URL as
// the first line of standard output:
//
//	go run ./examples/conformance -transport ws -addr 127.0.0.1:0 [-origin PATTERN]
//
// -transport defaults to stdio and -framing to header (LSP-style
// Content-Length headers; line is newline-delimited JSON). It logs to
// standard error only, at the level -log sets (debug, info, warn or off;
// default warn).
//
// The server exits with status 0 when its standard input closes, once the
// calls it has already read have been answered (for at most 1 s; see
// jsonrpc.Options.DrainTimeout), so `printf '…' | conformance` gets its
// replies. Usage errors exit with status 2, a connection that fails (such
// as input ending inside a message) with 1.
//
// Calls are cancelled as LSP cancels them, on every transport:
// {"method":"$/cancelRequest","params":{"id":ID}} cancels the inbound call
// ID (sleep answers Request cancelled), and the server sends one for a call
// of its own (see callback) that it stops waiting for.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// run parses args, serves one connection and returns the exit status.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	transport := fs.String("transport", "stdio", "transport: stdio or ws")
	framing := fs.String("framing", "header", "stdio framing: header or line")
	addr := fs.String("addr", "127.0.0.1:0", "ws: address to listen on (host:port)")
	var origins []string
	fs.Func("origin", "ws: another origin `pattern` allowed to connect (repeatable)", func(s string) error {
		origins = append(origins, s)
		return nil
	})
	level := fs.String("log", "warn", "log level on stderr: debug, info, warn or off")
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "conformance: "+format+"\n", a...)
		fs.Usage()
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		return usage("unexpected arguments: %q", fs.Args())
	}
	log, err := newLogger(stderr, *level)
	if err != nil {
		return usage("%v", err)
	}

	ctx := context.Background()
	switch *transport {
	case "stdio":
		var f stdio.Framing
		switch *framing {
		case "header":
			f = stdio.Header
		case "line":
			f = stdio.Line
		default:
			return usage("unknown framing %q (want header or line)", *framing)
		}
		err = serve(ctx, stdio.Stdio(stdio.Options{Framing: f}), log)
	case "ws":
		err = serveWS(*addr, origins, os.Stdout, log)
	default:
		return usage("unknown transport %q (want stdio or ws)", *transport)
	}
	if err != nil {
		log.Error("conformance: connection failed", "err", err)
		return 1
	}
	return 0
}

// serve runs the conformance methods on conn until the connection ends or
// ctx is done, and waits for every handler to return. Every transport goes
// through it.
func serve(ctx context.Context, conn jsonrpc.Conn, log *slog.Logger) error {
	peer := jsonrpc.NewPeer(conn, peerOptions(log))
	stop := context.AfterFunc(ctx, func() { peer.Close() })
	defer stop()
	log.Info("conformance: serving")
	err := peer.Wait()
	log.Info("conformance: connection ended", "err", err)
	return err
}

// peerOptions configures the Peer of every connection.
func peerOptions(log *slog.Logger) jsonrpc.Options {
	return jsonrpc.Options{
		Handler: newMux(),
		Logger:  log,
		Cancel:  jsonrpc.LSPCancel, // what the suites (and vscode-jsonrpc) send and expect
	}
}

// newLogger returns a text logger on w at the named level.
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	switch level {
	case "off":
		return slog.New(slog.DiscardHandler), nil
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "warn":
		l = slog.LevelWarn
	default:
		return nil, fmt.Errorf("unknown log level %q (want debug, info, warn or off)", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
