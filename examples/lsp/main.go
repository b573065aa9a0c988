// Command lsp is a tiny language server: it speaks the Language Server
// Protocol over its standard input and output (LSP's Content-Length header
// framing), the way an editor runs a server as a child process.
//
//	go run ./examples/lsp                  # quiet: logs warnings only
//	go run ./examples/lsp -log-level=info  # logs every message on stderr
//
// An editor is configured to start that command for plain-text files;
// examples/lsp/lsp_test.go (a Go client) and .ci/lsp/editor.mjs (VS Code's
// vscode-jsonrpc) drive it as an editor would.
//
// What it does:
//
//   - the lifecycle: initialize, initialized, shutdown, exit (status 0
//     after shutdown, 1 without); requests before initialize get
//     ServerNotInitialized (-32002), requests after shutdown InvalidRequest
//     (-32600);
//   - incremental text synchronisation (didOpen, didChange with range
//     edits in UTF-16 positions, didClose);
//   - diagnostics: after every open and change it publishes
//     textDocument/publishDiagnostics for the words TODO, FIXME and XXX;
//   - hover: the word under the cursor and the document's word count, in
//     markdown;
//   - custom/slowCount {textDocument, delayMs}: the word count after a
//     delay, to show cancellation ($/cancelRequest makes it answer
//     RequestCancelled, -32800) and work-done progress: $/progress begin,
//     reports, end, against the request's workDoneToken, or a token it
//     creates with window/workDoneProgress/create when the client accepts
//     that (capabilities.window.workDoneProgress);
//   - textDocument/documentSymbol: every word as a symbol; with a
//     partialResultToken, streamed in parts of 10 as $/progress, every
//     part written before the (empty) final result.
//
// main.go wires it up, server.go holds the state and the handlers,
// text.go the text handling and protocol.go the LSP types.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
)

const (
	serverName    = "peerwire-lsp-example"
	serverVersion = "0.1.0"

	// maxBatch is the Peer's limit on a batch.
	maxBatch = 1000

	// exitGrace bounds how long exit waits for requests in progress.
	exitGrace = time.Second
)

func main() {
	level := flag.String("log-level", "warn", "what to log on stderr: debug, info, warn or error")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [-log-level=warn]\n\nA language server on stdin/stdout (LSP header framing).\n\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	var lvl slog.Level
	if flag.NArg() > 0 || lvl.UnmarshalText([]byte(*level)) != nil {
		flag.Usage()
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	os.Exit(serve(stdio.Stdio(), log)) // stdio.Header framing is the default
}

// serve runs the server on conn until the exit notification or the end of
// the stream, and returns the process's exit status, for main to exit with.
func serve(conn jsonrpc.Conn, log *slog.Logger) int {
	srv, peer := listen(conn, log)
	select {
	case <-srv.exit:
		// Give the requests still running at most exitGrace to be
		// answered. Shutdown ends the Peer, closing Done, once they have
		// returned or ctx has ended; it is not waited for, since what
		// Close does after that (wait for the read loop, which over
		// stdio.Stdio may sit in a read from stdin) does not matter to a
		// process about to exit.
		ctx, cancel := context.WithTimeout(context.Background(), exitGrace)
		defer cancel()
		go peer.Shutdown(ctx)
		<-peer.Done()
		// Only now: a shutdown request that arrived just before exit
		// (a client that did not wait for its reply) may have run after
		// the exit notification, which does not wait for calls; it has
		// run by now, since Shutdown waits for the requests taken before.
		return srv.exitStatus()
	case <-peer.Done():
		// The editor closed our input without sending exit.
		if err := peer.Wait(); err != nil {
			log.Warn("connection failed", "err", err)
		} else {
			log.Info("input ended without exit")
		}
		return srv.exitStatus()
	}
}

// listen starts a server on conn.
func listen(conn jsonrpc.Conn, log *slog.Logger) (*server, *jsonrpc.Peer) {
	srv := newServer(log)
	mux := jsonrpc.NewMux()
	srv.register(mux)
	peer := jsonrpc.NewPeer(conn, jsonrpc.Options{
		Handler:  mux,
		Logger:   log,
		MaxBatch: maxBatch,
		// LSP's $/cancelRequest, both ways: the default is no dialect.
		Cancel: jsonrpc.LSPCancel,
		// LSP's $/progress: workDoneToken, partialResultToken, and
		// window/workDoneProgress/create.
		Progress: jsonrpc.LSPProgress,
		// Notifications stay ordered (no ConcurrentNotifications): the
		// server relies on it, see didOpen in server.go.
		//
		// Outermost first: the log line covers the lifecycle check too.
		Interceptors: []jsonrpc.Interceptor{logCalls(log), srv.lifecycle},
	})
	return srv, peer
}

// logCalls returns an Interceptor that logs every message in and out at
// level Info: direction, method, id (for a request) and the time taken,
// with the error if there is one. A handler error that is neither an LSP
// error nor a cancellation is a bug, logged at level Error.
func logCalls(log *slog.Logger) jsonrpc.Interceptor {
	return func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		if !log.Enabled(ctx, slog.LevelError) {
			return next(ctx)
		}
		start := time.Now()
		result, err := next(ctx)
		level := slog.LevelInfo
		attrs := make([]slog.Attr, 0, 4)
		attrs = append(attrs, slog.String("method", info.Method))
		if !info.ID.IsZero() {
			attrs = append(attrs, slog.String("id", info.ID.String()))
		}
		attrs = append(attrs, slog.Duration("elapsed", time.Since(start)))
		if err != nil {
			attrs = append(attrs, slog.Any("err", err))
			var rpcErr *jsonrpc.Error
			if !info.Outbound && !errors.As(err, &rpcErr) && !errors.Is(err, context.Canceled) {
				level = slog.LevelError
			}
		}
		msg := "rpc in"
		if info.Outbound {
			msg = "rpc out"
		}
		log.LogAttrs(ctx, level, msg, attrs...)
		return result, err
	}
}
