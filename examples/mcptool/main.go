// Command mcptool is a Model Context Protocol server built on the
// jsonrpc.Peer: a tool a desktop agent starts as a child process and talks
// to over its stdin and stdout, one JSON-RPC message per line (MCP's stdio
// transport).
//
//	go build -o mcptool ./examples/mcptool
//
// Its tools work on the files under a root, the first file:// root the
// client lists in reply to roots/list (asked for once the tools need it,
// and again after notifications/roots/list_changed), or the -root
// directory for a client that declares no roots. Over HTTP, where the
// client is whoever reaches the port, -root is required and bounds every
// client: a root it lists outside -root is refused:
//
//   - list_files: the files under a directory of the root, with sizes;
//   - read_file: a file's text; paths that leave the root are refused;
//   - summarize_file: reads a file and, while the client's tools/call is
//     still running, calls sampling/createMessage back on the client for
//     a summary, sending notifications/progress as it goes;
//   - wait: waits some seconds with progress each second; cancelled with
//     notifications/cancelled (jsonrpc.MCPCancel), it stops at once and
//     says so on stderr and in a notifications/message.
//
// A desktop agent's configuration starts it as any stdio MCP server:
//
//	{"mcpServers": {"files": {"command": "/path/to/mcptool", "args": ["-root", "/home/me/notes"]}}}
//
// With -http ADDR it serves the Streamable HTTP transport instead, at
// http://ADDR/mcp, for remote agents (httprpc.SessionServer): a session
// per client, each with its own server state; a tool's progress, its
// sampling request and its log lines go on the event stream of the
// tools/call they belong to, and a client whose stream was cut resumes it
// with Last-Event-ID, nothing lost or repeated:
//
//	mcptool -http 127.0.0.1:8931 -root /home/me/notes
//
// It answers to localhost names and IP addresses only (a page whose name
// an attacker points at this machine is refused: DNS rebinding); a server
// reached by a name lists it with -allowed-hosts:
//
//	mcptool -http :8931 -root /srv/notes -allowed-hosts notes.example.com
//
// It speaks revisions 2025-11-25, 2025-06-18 and 2025-03-26 of the
// specification. Diagnostics go to stderr, never to stdout, which carries
// only protocol messages.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
)

func main() {
	rootDir := flag.String("root", "", "the directory to serve when the client lists no roots; with -http, required, and the bound of every root a client lists")
	level := flag.String("log-level", "info", "what to log on stderr: debug, info, warn or error")
	httpAddr := flag.String("http", "", "serve MCP's Streamable HTTP transport on this address (at /mcp) instead of stdio")
	allowedHosts := flag.String("allowed-hosts", "", "with -http: the host names clients reach the server by, comma-separated (\"*\" for any); by default only localhost names and IP addresses")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: mcptool [-root DIR] [-log-level info] [-http ADDR [-allowed-hosts NAMES]]\n\nAn MCP server on stdin/stdout (newline-delimited JSON-RPC), or over Streamable HTTP with -http.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	var lvl slog.Level
	if flag.NArg() > 0 || lvl.UnmarshalText([]byte(*level)) != nil {
		flag.Usage()
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	if *httpAddr != "" {
		var hosts []string
		if *allowedHosts != "" {
			hosts = strings.Split(*allowedHosts, ",")
		}
		if err := serveHTTP(*httpAddr, *rootDir, hosts, log); err != nil {
			log.Warn("serving HTTP failed", "err", err)
			os.Exit(1)
		}
		return
	}
	srv := newServer(*rootDir, log)
	err := jsonrpc.Serve(stdio.Stdio(stdio.Options{Framing: stdio.Line}), jsonrpc.Options{
		Handler: srv.handler(),
		Logger:  log,
		Cancel:  jsonrpc.MCPCancel,
		// notifications/progress against _meta.progressToken.
		Progress: jsonrpc.MCPProgress,
	})
	if err != nil {
		log.Warn("connection failed", "err", err)
		os.Exit(1)
	}
	log.Info("the client closed our input: exiting")
}
