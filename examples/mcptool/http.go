package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// mcpPath is where mcptool -http serves MCP.
const mcpPath = "/mcp"

// shutdownTimeout bounds how long mcptool -http lets running tools finish
// once it is told to stop.
const shutdownTimeout = 5 * time.Second

// sessions gives every Streamable HTTP session a server of its own: over
// stdio there is one client per process, over HTTP one per session, each
// with its own initialize, capabilities and roots.
type sessions struct {
	fallbackRoot string
	log          *slog.Logger

	mu sync.Mutex
	m  map[*jsonrpc.Peer]*jsonrpc.Mux
}

// connect makes the server of a session that starts (SessionServer's
// OnConnect, before its first request is read).
func (ss *sessions) connect(p *jsonrpc.Peer, r *http.Request) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	srv := newServer(ss.fallbackRoot, ss.log)
	srv.confined = true // the client is whoever reaches the port: -root bounds it
	ss.m[p] = srv.handler()
}

// disconnect forgets a session that has ended.
func (ss *sessions) disconnect(p *jsonrpc.Peer, cause error) {
	ss.mu.Lock()
	delete(ss.m, p)
	ss.mu.Unlock()
	ss.log.Info("session ended", "cause", cause)
}

// ServeRPC serves a request with the server of its session.
func (ss *sessions) ServeRPC(ctx context.Context, req *jsonrpc.Request) (any, error) {
	ss.mu.Lock()
	mux := ss.m[jsonrpc.PeerFromContext(ctx)]
	ss.mu.Unlock()
	if mux == nil { // the session is ending
		return nil, jsonrpc.NewError(jsonrpc.CodeShuttingDown, "session ended", nil)
	}
	return mux.ServeRPC(ctx, req)
}

// serveHTTP serves MCP's Streamable HTTP transport on addr until SIGINT or
// SIGTERM, then lets running tools finish within shutdownTimeout.
func serveHTTP(addr, fallbackRoot string, allowedHosts []string, log *slog.Logger) error {
	if fallbackRoot == "" {
		return errors.New("-http needs -root: the directory its clients may read (roots they list must lie within it)")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	ss := &sessions{fallbackRoot: fallbackRoot, log: log, m: map[*jsonrpc.Peer]*jsonrpc.Mux{}}
	mcp := &httprpc.SessionServer{
		Peer: jsonrpc.Options{
			Handler:  ss,
			Logger:   log,
			Cancel:   jsonrpc.MCPCancel,
			Progress: jsonrpc.MCPProgress,
		},
		OnConnect:    ss.connect,
		OnDisconnect: ss.disconnect,
		// The names it is reached by; by default localhost names and IP
		// addresses only (DNS rebinding).
		AllowedHosts: allowedHosts,
	}
	mux := http.NewServeMux()
	mux.Handle(mcpPath, mcp)
	// The timeouts against slow clients: a body trickled in holds one of
	// the SessionServer's MaxBodies slots until ReadTimeout.
	srv := httprpc.NewHTTPServer(ln.Addr().String(), mux)
	log.Info(fmt.Sprintf("serving MCP at http://%s%s", ln.Addr(), mcpPath))

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(stop)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case sig := <-stop:
		log.Info("stopping", "signal", sig)
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	// The sessions first: their event streams are requests that
	// http.Server.Shutdown would otherwise wait for.
	err = mcp.Shutdown(ctx)
	// Then the connections, which hold no session now. Shutdown waits
	// for a connection a client opened and has sent nothing on yet (an
	// HTTP client's spare one, kept in its pool) for up to 5 s before it
	// counts it as idle: give them connGrace, then close what is left.
	gctx, gcancel := context.WithTimeout(ctx, connGrace)
	defer gcancel()
	if srv.Shutdown(gctx) != nil {
		srv.Close()
	}
	<-served // http.ErrServerClosed
	return err
}

// connGrace bounds how long stopping waits for HTTP connections once the
// sessions have ended.
const connGrace = time.Second
