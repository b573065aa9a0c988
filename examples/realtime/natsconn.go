package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// natsConfig says where a node finds NATS (the flags -nats, -nats-embed,
// -nats-addr, -data) and how many copies of the board it keeps (-replicas):
//
//   - neither URL nor Embed: an embedded server inside this process, with
//     JetStream, listening on no port: one node, no setup;
//   - Embed: an embedded server with JetStream listening on Addr, which
//     other nodes join with -nats nats://Addr;
//   - URL: an existing NATS server (with JetStream), or several servers of
//     one NATS cluster, comma-separated, joined with retries.
//
// The embedded server keeps its store in Data, across restarts, or if
// Data is "" in a temporary directory removed at exit.
type natsConfig struct {
	URL      string
	Embed    bool
	Addr     string
	Data     string
	Replicas int
}

// How a node's connection to a NATS server it joins finds trouble: a ping
// every pingInterval, and the connection counts as lost after maxPingsOut
// pings without an answer, so a server that stops answering without
// closing (paused, cut off) is left within
// pingInterval×(maxPingsOut+1) = 4 s; then nats.go tries the next server
// every reconnectWait.
const (
	pingInterval  = time.Second
	maxPingsOut   = 3
	reconnectWait = 500 * time.Millisecond
)

// connectTimeout bounds a connection attempt to a server (nats.Timeout,
// 2 s by default), and writeTimeoutNATS a write to it (nats.FlusherTimeout,
// a minute by default): a server that accepts but does not answer holds
// the connection (and its lock) no longer than that.
const (
	connectTimeout   = time.Second
	writeTimeoutNATS = time.Second
)

// board returns what the board needs to know of cfg.
func (cfg natsConfig) board() boardConfig {
	url := cfg.URL
	if url == "" {
		url = "embedded"
	}
	return boardConfig{URL: url, Replicas: cfg.Replicas}
}

// boardConfig is what the board needs to know of where NATS is, and the
// node's telemetry.
type boardConfig struct {
	URL       string     // the -nats URL(s), for logs and /healthz; "embedded"
	Replicas  int        // copies of each bucket; 0: 3 on a NATS cluster, else 1
	Telemetry *telemetry // traces of the pages' calls (-otlp); nil: none
}

// checkURLs returns an error unless list is a comma-separated list of NATS
// server URLs, nats://host:port (or host:port, or tls://, ws://, wss://),
// so that a typo is an error at start rather than a wait for ever.
func checkURLs(list string) error {
	for raw := range strings.SplitSeq(list, ",") {
		raw = strings.TrimSpace(raw)
		s := raw
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := url.Parse(s)
		if err != nil {
			return fmt.Errorf("realtime demo: -nats %q: %w", raw, err)
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return fmt.Errorf("realtime demo: -nats %q: scheme %q, want nats://, tls://, ws:// or wss://", raw, u.Scheme)
		}
		host, port := u.Hostname(), u.Port()
		if host == "" || strings.Contains(host, ":") && net.ParseIP(host) == nil {
			return fmt.Errorf("realtime demo: -nats %q: no host, want e.g. nats://127.0.0.1:4222", raw)
		}
		if port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("realtime demo: -nats %q: bad port %q", raw, port)
			}
		}
	}
	return nil
}

// connectNATS connects to NATS as cfg says and returns the connection and a
// function that closes it (and the embedded server, if one was started).
func connectNATS(cfg natsConfig, log *slog.Logger) (*natsConn, func(), error) {
	if cfg.URL != "" && cfg.Embed {
		return nil, nil, errors.New("realtime demo: -nats and -nats-embed exclude each other: " +
			"one node starts the server (-nats-embed), the others join it (-nats URL)")
	}
	if cfg.URL != "" && cfg.Data != "" {
		return nil, nil, errors.New("realtime demo: -data is for the embedded NATS server's store; " +
			"with -nats the board is where that server keeps its store (nats-server -js -sd DIR)")
	}
	if cfg.URL == "" {
		return embedNATS(cfg, log)
	}
	if err := checkURLs(cfg.URL); err != nil {
		return nil, nil, err
	}
	c := newNATSConn()
	nc, err := nats.Connect(cfg.URL, append([]nats.Option{
		nats.Name("realtime demo"),
		nats.RetryOnFailedConnect(true), // start even when the server is not up yet
		nats.MaxReconnects(-1),
		nats.ReconnectWait(reconnectWait),
		nats.PingInterval(pingInterval),
		nats.MaxPingsOutstanding(maxPingsOut),
		nats.Timeout(connectTimeout),
		nats.FlusherTimeout(writeTimeoutNATS),
	}, c.handlers(log)...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("realtime demo: cannot connect to NATS at %s: %w", cfg.URL, err)
	}
	c.init(nc)
	if !c.connected() {
		log.Info("waiting for NATS", "url", cfg.URL)
	}
	return c, nc.Close, nil
}

// embedNATS starts a NATS server with JetStream in this process, its store
// in cfg.Data (or a temporary directory removed at the end), and connects
// to it in process. With cfg.Embed it also listens on cfg.Addr for other nodes.
func embedNATS(cfg natsConfig, log *slog.Logger) (*natsConn, func(), error) {
	dir, removeDir := cfg.Data, func() {}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "realtime-nats-")
		if err != nil {
			return nil, nil, err
		}
		dir, removeDir = tmp, func() { os.RemoveAll(tmp) }
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("realtime demo: -data: %w", err)
	}
	opts := &server.Options{
		ServerName: "realtime",
		JetStream:  true,
		StoreDir:   dir,
		DontListen: !cfg.Embed,
		NoLog:      true,
		NoSigs:     true,
	}
	if cfg.Embed {
		host, port, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			removeDir()
			return nil, nil, fmt.Errorf("realtime demo: -nats-addr %q: %w", cfg.Addr, err)
		}
		opts.Host = host
		if opts.Port, err = strconv.Atoi(port); err != nil {
			removeDir()
			return nil, nil, fmt.Errorf("realtime demo: -nats-addr %q: bad port", cfg.Addr)
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		removeDir()
		return nil, nil, fmt.Errorf("realtime demo: embedded NATS: %w", err)
	}
	ns.Start()
	stopServer := func() {
		ns.Shutdown()
		ns.WaitForShutdown()
		removeDir()
	}
	if !ns.ReadyForConnections(10 * time.Second) {
		stopServer()
		return nil, nil, fmt.Errorf("realtime demo: embedded NATS did not start (is %s free? choose another with -nats-addr)", cfg.Addr)
	}
	if cfg.Embed {
		log.Info("embedded NATS with JetStream: other nodes join with -nats", "url", ns.ClientURL())
	}
	c := newNATSConn()
	nc, err := nats.Connect("", append([]nats.Option{nats.InProcessServer(ns), nats.Name("realtime demo")}, c.handlers(log)...)...)
	if err != nil {
		stopServer()
		return nil, nil, fmt.Errorf("realtime demo: connect to the embedded NATS: %w", err)
	}
	c.init(nc)
	return c, func() { nc.Close(); stopServer() }, nil
}
