// Command realtime is the library's main demo: a shared sticky-notes board
// in the browser, where every open page sees every other page's actions
// live. Run it and open the URL it prints in two browser windows:
//
//	go run ./examples/realtime              # -addr 127.0.0.1:8080
//
// One Go server serves the page (embedded static files) and JSON-RPC 2.0
// over WebSocket at /rpc, with ws.Server. The page's JavaScript client is
// static/rpc.js, a small JSON-RPC 2.0 module written for this demo. On the
// wire you can watch (the page shows every frame):
//
//   - the page calling the server: board.post returns the new note, or the
//     application error -32010 when the text is empty or too long;
//   - the server calling the page: before it posts a note, the server calls
//     page.name on the posting page and signs the note with the answer;
//   - the server notifying every page through a jsonrpc.Group:
//     board.posted, board.liked, board.cleared, board.stats;
//   - a batch: on load the page sends [board.list, board.stats] as one
//     JSON array and renders both replies.
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/ws"
)

//go:embed static
var static embed.FS

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to serve on (host:port)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	ln, err := listen(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("realtime demo: open %s\n", pageURL(ln.Addr()))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, ln, log); err != nil {
		log.Error("server failed", "err", err)
		os.Exit(1)
	}
}

// listen opens the TCP listener, saying plainly when the port is taken.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("realtime demo: cannot listen on %s: the port is already in use "+
			"(another copy running?); choose another with -addr, e.g. -addr 127.0.0.1:0 for any free port", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("realtime demo: cannot listen on %s: %w", addr, err)
	}
	return ln, nil
}

// pageURL is the URL to open for a listener's address.
func pageURL(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String() + "/"
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(tcp.Port)) + "/"
}

// serve serves the demo on ln until ctx ends, then shuts down: WebSocket
// peers first (in-flight calls finish), then the HTTP server.
func serve(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	board := NewBoard(log)
	rpc := &ws.Server{
		Handler: board.Mux(),
		Options: ws.Options{Peer: &jsonrpc.Options{
			Logger:       log,
			Interceptors: []jsonrpc.Interceptor{logCalls(log)},
		}},
		OnConnect: func(p *jsonrpc.Peer, r *http.Request) {
			log.Info("page connected", "remote", r.RemoteAddr)
			board.Join(p)
		},
		// OriginPatterns stays empty: only pages served by this server
		// (same origin) may connect.
	}

	var pagesDone sync.WaitGroup // the /rpc handlers, which outlive hijacking
	mux := http.NewServeMux()
	mux.HandleFunc("/rpc", func(w http.ResponseWriter, r *http.Request) {
		pagesDone.Add(1)
		defer pagesDone.Done()
		rpc.ServeHTTP(w, r) // returns when the page's connection ends
		log.Info("page disconnected", "remote", r.RemoteAddr)
		board.Left()
	})
	files, _ := fs.Sub(static, "static")
	mux.Handle("/", http.FileServerFS(files))

	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rpc.Shutdown(sctx)
	err := hs.Shutdown(sctx)
	<-errc // http.ErrServerClosed
	pagesDone.Wait()
	return err
}

// logCalls returns an interceptor that logs every call and notification a
// page's Peer serves or sends (the server's page.name calls too) with its
// method, id and how long it took.
func logCalls(log *slog.Logger) jsonrpc.Interceptor {
	return func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		start := time.Now()
		result, err := next(ctx)
		attrs := []any{"method", info.Method, "elapsed", time.Since(start)}
		if info.ID.IsZero() {
			attrs = append(attrs, "notification", true)
		} else {
			attrs = append(attrs, "id", info.ID.String())
		}
		if info.Outbound {
			attrs = append(attrs, "to", "page")
		}
		if err != nil {
			e := jsonrpc.DefaultMapError(err) // the error object on the wire
			attrs = append(attrs, "code", e.Code, "err", e.Message)
		}
		log.Info("rpc", attrs...)
		return result, err
	}
}
