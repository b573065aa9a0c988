package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// natsConfig says where a node finds NATS (the flags -nats, -nats-embed and
// -nats-addr):
//
//   - neither URL nor Embed: an embedded server inside this process, with
//     JetStream, listening on no port: one node, no setup;
//   - Embed: an embedded server with JetStream listening on Addr, which
//     other nodes join with -nats nats://Addr;
//   - URL: an existing NATS server (with JetStream), joined with retries.
type natsConfig struct {
	URL   string
	Embed bool
	Addr  string
}

// connectNATS connects to NATS as cfg says and returns the connection and a
// function that closes it (and the embedded server, if one was started).
func connectNATS(cfg natsConfig, log *slog.Logger) (*nats.Conn, func(), error) {
	if cfg.URL != "" && cfg.Embed {
		return nil, nil, errors.New("realtime demo: -nats and -nats-embed exclude each other: " +
			"one node starts the server (-nats-embed), the others join it (-nats URL)")
	}
	if cfg.URL != "" {
		nc, err := nats.Connect(cfg.URL,
			nats.Name("realtime demo"),
			nats.RetryOnFailedConnect(true), // start even when the server is not up yet
			nats.MaxReconnects(-1),
			nats.ConnectHandler(func(nc *nats.Conn) { log.Info("nats connected", "url", nc.ConnectedUrl()) }),
			nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("nats reconnected", "url", nc.ConnectedUrl()) }),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Info("nats disconnected", "err", err) }),
			nats.ClosedHandler(func(*nats.Conn) { log.Info("nats connection closed") }),
		)
		if err != nil {
			return nil, nil, fmt.Errorf("realtime demo: cannot connect to NATS at %s: %w", cfg.URL, err)
		}
		return nc, nc.Close, nil
	}
	return embedNATS(cfg, log)
}

// embedNATS starts a NATS server with JetStream in this process, its store
// in a temporary directory removed at the end, and connects to it in
// process. With cfg.Embed it also listens on cfg.Addr for other nodes.
func embedNATS(cfg natsConfig, log *slog.Logger) (*nats.Conn, func(), error) {
	dir, err := os.MkdirTemp("", "realtime-nats-")
	if err != nil {
		return nil, nil, err
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
			os.RemoveAll(dir)
			return nil, nil, fmt.Errorf("realtime demo: -nats-addr %q: %w", cfg.Addr, err)
		}
		opts.Host = host
		if opts.Port, err = strconv.Atoi(port); err != nil {
			os.RemoveAll(dir)
			return nil, nil, fmt.Errorf("realtime demo: -nats-addr %q: bad port", cfg.Addr)
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("realtime demo: embedded NATS: %w", err)
	}
	ns.Start()
	stopServer := func() {
		ns.Shutdown()
		ns.WaitForShutdown()
		os.RemoveAll(dir)
	}
	if !ns.ReadyForConnections(10 * time.Second) {
		stopServer()
		return nil, nil, fmt.Errorf("realtime demo: embedded NATS did not start (is %s free? choose another with -nats-addr)", cfg.Addr)
	}
	if cfg.Embed {
		log.Info("embedded NATS with JetStream: other nodes join with -nats", "url", ns.ClientURL())
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns), nats.Name("realtime demo"))
	if err != nil {
		stopServer()
		return nil, nil, fmt.Errorf("realtime demo: connect to the embedded NATS: %w", err)
	}
	return nc, func() { nc.Close(); stopServer() }, nil
}
