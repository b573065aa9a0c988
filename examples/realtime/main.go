// Command realtime is the library's main demo: a shared sticky-notes board
// in the browser, where every open page sees every other page's actions
// live. Run it and open the URL it prints in two browser windows:
//
//	go run ./examples/realtime              # -addr 127.0.0.1:8080
//
// Or run several nodes that share one board, over NATS:
//
//	go run ./examples/realtime -addr 127.0.0.1:8081 -nats-embed                  # and NATS on 127.0.0.1:4222
//	go run ./examples/realtime -addr 127.0.0.1:8082 -nats nats://127.0.0.1:4222
//
// Or join a NATS cluster run the way production runs it, three
// nats-server processes with routes and JetStream, given every server:
//
//	go run ./examples/realtime -addr 127.0.0.1:8081 -nats nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224
//
// The board's state is in NATS JetStream (store.go), in file storage with
// -replicas copies (3 on a NATS cluster, by default), so every node shows
// the same board, a node started late replays it, and a NATS server's
// restart or loss loses nothing; its news reaches the pages of every node
// through a cluster.Topic (board.go). With no flag the node embeds a NATS
// server that listens on no port: one node, no setup; its board is kept
// across restarts with -data DIR, and is gone at exit without.
//
// The board describes itself (describe.go): rpc.discover answers its
// OpenRPC document, -openrpc prints it and exits, and the page's types
// (static/api.d.ts, which app.js is checked against) are made from it by
// go generate.
//
// Traces: with -otlp the node exports the spans of its pages' calls and
// notifications (package otel of this module: rpc.method on an allow-list,
// W3C trace context in params._meta both ways, as MCP carries it) over
// OTLP/HTTP to any collector, Jaeger's included; off by default:
//
//	go run ./examples/realtime -otlp http://127.0.0.1:4318 -otlp-service realtime-1
//
// The standard OTEL_EXPORTER_OTLP_* variables are honoured (an endpoint
// set there turns the export on without the flag; headers, timeout,
// compression), and so are OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER and OTEL_BSP_*; each node's resource has its own
// service.instance.id, its address. A page can add its own spans to the
// same traces with jsonrpc.js's tracing hook (browser/README.md). At exit the node exports
// what is left within 5 s (TestOTLPExport; a collector that never
// answers does not hold it longer). board.nudge, which calls page.nudge
// on a user's page on whichever node it is (TestNudgeAcrossNodes), is a
// call that crosses NATS.
//
// GET /healthz answers at once in every state, 200 only when the node has
// NATS and its board (board.go's health lists the states); /rpc answers
// 503 until the board is loaded.
//
// One Go server serves the page (embedded static files), a sign-in at
// /login, and JSON-RPC 2.0 over WebSocket at /rpc, with ws.Server. The
// page's JavaScript client is the library's own, jsonrpc.js, served at
// /js/ from the Go package browser (embedded: no npm).
//
// Who posts: the page signs in first. POST /login {"name": "alice"} starts
// a session and sets its random token as a cookie (HttpOnly, so the page's
// scripts cannot read it; SameSite=Strict, so other sites' requests do not
// carry it). The browser sends the cookie with the WebSocket upgrade, and
// requireSession, an ordinary http middleware in front of the ws.Server,
// refuses an upgrade without a live session with 401 and otherwise puts
// the user into the request's context. ws.Server hands that context's
// values to every handler of the connection (its default BaseContext), so
// board.post signs each note with the user from its ctx: not with anything
// the page says, then or later. The sign-in itself is a stand-in: it takes
// any name, with no password. A real application would check credentials
// there (or trust its single sign-on) and nothing else would change. The
// sessions live in memory, bounded so that no flood of sign-ins can lock
// anyone out: at most 16 per client address and 10,000 in all, the least
// recently used going first; they end after 30 minutes unused, 12 hours in
// all, or with the server. A page signs in again as it reconnects, on the
// node it connects to.
//
// On the wire you can watch (the page shows every frame):
//
//   - the page calling the server: board.post returns the new note, or the
//     application error -32010 when the text is empty or too long;
//   - the server calling the page: before it clears the board, the server
//     calls page.confirm on the page that asked, with the number of notes
//     it is about to clear, and clears only if the person says yes;
//   - the server notifying every page, on every node, through a
//     cluster.Topic: board.posted, board.liked, board.cleared, board.stats;
//     or, for a page that subscribed to the topic "board" (package topic),
//     the same news as topic.message notifications with positions, kept
//     in a JetStream stream (1 MiB, 5 minutes), so that a page that comes
//     back, to any node, subscribes with its position and gets what it
//     missed instead of fetching the board again;
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
	"github.com/peerwire/jsonrpc/browser"
	"github.com/peerwire/jsonrpc/cluster"
	jotel "github.com/peerwire/jsonrpc/otel"
	"github.com/peerwire/jsonrpc/ws"
)

//go:embed static
var static embed.FS

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to serve on (host:port)")
	var nc natsConfig
	flag.StringVar(&nc.URL, "nats", "", "join a cluster: the URL of its NATS server (with JetStream), e.g. nats://127.0.0.1:4222, "+
		"or the URLs of a NATS cluster's servers, comma-separated")
	flag.IntVar(&nc.Replicas, "replicas", 0, "copies of each of the board's buckets: 3 on a NATS cluster, 1 on a single server; 0: that, chosen from the server NATS says it is")
	flag.StringVar(&nc.Data, "data", "", "without -nats: keep the embedded NATS server's store (the board) in this directory, across restarts; default: a temporary one, removed at exit")
	flag.BoolVar(&nc.Embed, "nats-embed", false, "start a NATS server with JetStream in this node, on -nats-addr, for other nodes to join")
	flag.StringVar(&nc.Addr, "nats-addr", "127.0.0.1:4222", "with -nats-embed: the address the embedded NATS server listens on")
	describeOnly := flag.Bool("openrpc", false, "print the board's OpenRPC document (what rpc.discover answers) and exit")
	var oc otlpConfig
	flag.StringVar(&oc.Endpoint, "otlp", "", "export traces over OTLP/HTTP to this collector base URL, e.g. http://127.0.0.1:4318 "+
		"(Jaeger, an OpenTelemetry Collector); default: off, unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set")
	flag.StringVar(&oc.Service, "otlp-service", "", "with -otlp: the service.name of this node's spans; default OTEL_SERVICE_NAME, else realtime")
	flag.Parse()
	if *describeOnly {
		if err := printDocument(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*addr, nc, oc, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run serves the demo on addr, with NATS as cfg says and traces exported
// as oc says, until SIGINT or SIGTERM.
func run(addr string, cfg natsConfig, oc otlpConfig, log *slog.Logger) error {
	ln, err := listen(addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	tel, err := startTelemetry(oc, ln.Addr().String())
	if err != nil {
		return err
	}
	defer func() {
		if err := tel.shutdown(); err != nil {
			log.Warn("telemetry", "err", err)
		}
	}()
	if tel != nil {
		log = slog.New(jotel.LogHandler(log.Handler()))
	}
	conn, closeNATS, err := connectNATS(cfg, log)
	if err != nil {
		return err
	}
	defer closeNATS()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ready := func() { fmt.Printf("realtime demo: open %s\n", pageURL(ln.Addr())) }
	bc := cfg.board()
	bc.Telemetry = tel
	if err := serve(ctx, ln, conn, bc, log, ready); err != nil {
		return fmt.Errorf("realtime demo: %w", err)
	}
	return nil
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

// serve serves the demo on ln, with the board in nc's JetStream as cfg
// says, until ctx ends, then shuts down: the board's work on NATS first
// (a call waiting on it fails at once), then the WebSocket peers (their
// replies written), then the HTTP server, within 3 s however NATS is. It serves /healthz
// at once, and /rpc once the board is loaded (503 before); it calls ready,
// if not nil, once the board is loaded.
func serve(ctx context.Context, ln net.Listener, nc *natsConn, cfg boardConfig, log *slog.Logger, ready func()) error {
	bctx, stopBoard := context.WithCancel(context.Background())
	defer stopBoard()
	board, loaded, wait, err := startBoard(bctx, nc, cfg, log)
	if err != nil {
		return err
	}
	defer wait()
	defer stopBoard()
	rpc := &ws.Server{
		Peer: cfg.Telemetry.peerOptions(jsonrpc.Options{
			Handler:      board.Mux(),
			Logger:       log,
			Interceptors: []jsonrpc.Interceptor{logCalls(log)},
		}),
		// BaseContext stays the default, the upgrade request's context:
		// the handlers find the user that requireSession put there.
		// Neither hook waits for NATS (Board.Join at most joinFlush).
		OnConnect: func(p *jsonrpc.Peer, r *http.Request) {
			user, _ := userFrom(r.Context())
			log.Info("page connected", "user", user, "remote", r.RemoteAddr)
			board.Join(p)
			board.register(p, user)
		},
		OnDisconnect: func(p *jsonrpc.Peer, cause error) {
			log.Info("page disconnected", "cause", cause)
			board.Left(p)
		},
		// OriginPatterns stays empty: only pages served by this server
		// (same origin) may connect.
	}

	var auth sessions
	mux := http.NewServeMux()
	mux.HandleFunc("/login", auth.login)
	mux.Handle("/rpc", auth.requireSession(whenLoaded(loaded, rpc)))
	mux.HandleFunc("/healthz", board.health)
	files, _ := fs.Sub(static, "static")
	mux.Handle("/js/", http.StripPrefix("/js/", browser.Handler()))
	mux.Handle("/", http.FileServerFS(files))

	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	case <-loaded:
		if ready != nil {
			ready()
		}
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
		}
	}
	// What waits on NATS for the pages first (the handlers' JetStream
	// calls, the news they publish, the page count): a call in flight
	// fails at once rather than hold the shutdown for its timeouts, which
	// a stopped NATS server would use up. Then the WebSocket connections,
	// their replies written: http.Server.Shutdown does not know about
	// hijacked connections. rpc.Shutdown returns once every /rpc request
	// has returned (OnDisconnect included), or when sctx ends.
	stopBoard()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rpc.Shutdown(sctx); err != nil {
		log.Warn("pages still busy at shutdown: their connections were closed", "err", err)
	}
	err = hs.Shutdown(sctx)
	<-errc // http.ErrServerClosed
	return err
}

// whenLoaded answers 503 until loaded is closed, then serves with h.
func whenLoaded(loaded <-chan struct{}, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-loaded:
			h.ServeHTTP(w, r)
		default:
			http.Error(w, "the board is not loaded yet: see /healthz", http.StatusServiceUnavailable)
		}
	})
}

// logCalls returns an interceptor that logs every call and notification a
// page's Peer serves or sends (the server's page.confirm calls too) with its
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

// startBoard starts following the board in JetStream and keeping this
// node's page count in it, until bctx ends; loaded is closed once the
// board is loaded, and wait returns once the count is deleted (at most a
// second) and the board's goroutines are done.
func startBoard(bctx context.Context, nc *natsConn, cfg boardConfig, log *slog.Logger) (*Board, <-chan struct{}, func(), error) {
	nodes, err := cluster.New(nc.Conn, cluster.Options{Prefix: "realtime", Logger: log, Hook: cfg.Telemetry.clusterHook()})
	if err != nil {
		return nil, nil, nil, err
	}
	hist, err := cluster.NewHistoryStore(nc.Conn, cluster.HistoryOptions{Prefix: "realtime", Replicas: cfg.Replicas,
		Hook: cfg.Telemetry.clusterHook()})
	if err != nil {
		nodes.Close()
		return nil, nil, nil, err
	}
	st := newStore(log, cfg.Replicas, nc.Conn)
	board := NewBoard(log, st, nodes, hist, nc, cfg.URL, kvKey(nodes.ID()))
	board.topics.Hook = cfg.Telemetry.topicHook()
	board.ctx = bctx
	var wg sync.WaitGroup
	wg.Go(func() { st.run(bctx, nc.Conn, cfg.URL) })
	wg.Go(func() { board.keepOnline(bctx) })
	return board, st.loaded, func() { wg.Wait(); board.bg.Wait(); board.topics.Close(); nodes.Close() }, nil
}
