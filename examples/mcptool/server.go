package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// Error codes. The specification uses JSON-RPC's own codes for protocol
// errors; codeNotInitialized is the one LSP and most MCP servers use for a
// request before initialize.
const codeNotInitialized = -32002

// notifyTimeout bounds a notification the server sends on its own.
const notifyTimeout = 5 * time.Second

// server is the MCP server's state for its one client.
type server struct {
	fallbackRoot string // the -root flag, used when the client lists no roots
	// confined: the client's roots must lie within fallbackRoot, which
	// bounds what any client may read (over HTTP, where the client is
	// whoever reaches the port, not the user who started mcptool).
	confined bool
	log      *slog.Logger

	mu          sync.Mutex
	initialized bool // initialize was answered
	caps        clientCapabilities
	roots       []string // the client's roots as directories, fetched on first use; nil until then
}

func newServer(fallbackRoot string, log *slog.Logger) *server {
	return &server{fallbackRoot: fallbackRoot, log: log}
}

// handler returns the methods the server serves.
func (s *server) handler() *jsonrpc.Mux {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "initialize", s.initialize)
	jsonrpc.Register(mux, "notifications/initialized", func(context.Context, struct{}) (any, error) {
		s.log.Info("the client is ready")
		return nil, nil
	})
	jsonrpc.Register(mux, "ping", func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil })
	jsonrpc.Register(mux, "logging/setLevel", func(_ context.Context, p setLevelParams) (struct{}, error) {
		s.log.Info("the client set the log level", "level", p.Level)
		return struct{}{}, nil
	})
	jsonrpc.Register(mux, "notifications/roots/list_changed", func(context.Context, struct{}) (any, error) {
		s.mu.Lock()
		s.roots = nil // fetched again when next needed
		s.mu.Unlock()
		return nil, nil
	})
	jsonrpc.Register(mux, "tools/list", requireInit(s, func(context.Context, struct{}) (toolsListResult, error) {
		return toolsListResult{Tools: toolDefs()}, nil
	}))
	jsonrpc.Register(mux, "tools/call", requireInit(s, s.callTool))
	return mux
}

// initialize answers the client's first request: it agrees on a protocol
// version and records what the client can serve.
func (s *server) initialize(_ context.Context, p initializeParams) (initializeResult, error) {
	version := supportedVersions[0]
	if slices.Contains(supportedVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	s.mu.Lock()
	s.initialized, s.caps, s.roots = true, p.Capabilities, nil
	s.mu.Unlock()
	s.log.Info("initialize", "client", p.ClientInfo.Name, "asked", p.ProtocolVersion, "agreed", version,
		"roots", p.Capabilities.Roots != nil, "sampling", p.Capabilities.Sampling != nil)
	return initializeResult{
		ProtocolVersion: version,
		ServerInfo:      implementation{Name: "mcptool", Title: "peerwire mcptool", Version: "0.1.0"},
		Instructions:    "Files under the client's first root (or -root): list_files, read_file, summarize_file (asks the client to sample). wait sleeps, and stops when cancelled.",
	}, nil
}

// requireInit refuses a request that comes before initialize.
func requireInit[P, R any](s *server, fn func(context.Context, P) (R, error)) func(context.Context, P) (R, error) {
	return func(ctx context.Context, p P) (R, error) {
		s.mu.Lock()
		ok := s.initialized
		s.mu.Unlock()
		if !ok {
			var zero R
			return zero, jsonrpc.NewError(codeNotInitialized, "server not initialized", nil)
		}
		return fn(ctx, p)
	}
}

// clientCaps returns what the client declared in initialize.
func (s *server) clientCaps() clientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

// root returns the directory the tools work in: the client's first file
// root, asked for with roots/list when the client declared roots (once,
// then again after notifications/roots/list_changed), else -root. When
// confined, roots outside -root are refused (logged), and -root serves if
// none is left.
func (s *server) root(ctx context.Context) (string, error) {
	if s.clientCaps().Roots == nil {
		if s.fallbackRoot == "" {
			return "", errors.New("no root: the client declared no roots capability and mcptool was started without -root")
		}
		return s.fallbackRoot, nil
	}
	s.mu.Lock()
	dirs := s.roots
	s.mu.Unlock()
	if dirs == nil {
		var res rootsListResult
		if err := jsonrpc.PeerFromContext(ctx).Call(ctx, "roots/list", nil, &res); err != nil {
			return "", fmt.Errorf("roots/list: %w", err)
		}
		dirs = []string{}
		for _, r := range res.Roots {
			dir, ok := fileURIPath(r.URI)
			if ok && s.confined && !within(s.fallbackRoot, dir) {
				s.log.Warn("roots/list: a root outside -root refused", "root", dir, "-root", s.fallbackRoot)
				continue
			}
			if ok {
				dirs = append(dirs, dir)
			}
		}
		s.mu.Lock()
		s.roots = dirs
		s.mu.Unlock()
		s.log.Info("roots/list", "roots", dirs)
	}
	switch {
	case len(dirs) > 0:
		return dirs[0], nil
	case s.fallbackRoot != "":
		return s.fallbackRoot, nil
	}
	return "", errors.New("no root: the client lists no file:// roots and mcptool was started without -root")
}

// within reports whether dir is bound or lies under it, by their cleaned
// paths (openRoot then refuses symbolic links that leave bound).
func within(bound, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(bound), filepath.Clean(dir))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// fileURIPath returns the local directory a file:// URI names.
func fileURIPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", false
	}
	return filepath.FromSlash(u.Path), true
}

// progress reports the progress of the tools/call being served, as
// notifications/progress against the call's _meta.progressToken
// (jsonrpc.MCPProgress puts the token in); a no-op when the client gave
// none.
func progress(ctx context.Context, done, total float64, msg string) {
	jsonrpc.ReportProgress(ctx, progressParams{Progress: done, Total: total, Message: msg})
}

// logToClient sends notifications/message at level info. It uses a ctx of
// its own, so that it can say a cancelled call stopped.
func logToClient(ctx context.Context, data string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyTimeout)
	defer cancel()
	jsonrpc.PeerFromContext(ctx).Notify(ctx, "notifications/message",
		logMessageParams{Level: "info", Logger: "mcptool", Data: data})
}
