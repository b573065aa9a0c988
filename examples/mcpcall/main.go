// Command mcpcall is a command-line client for an MCP server over
// Streamable HTTP, built on httprpc.Dial: it initializes a session, lists
// the server's tools, and calls one, printing what comes back; then it
// deletes the session. Where curl shows one HTTP exchange, mcpcall runs
// the protocol: the session's id on every request, the server's own
// requests while the call runs (it answers elicitation/create, and
// refuses sampling), progress and log notifications, and streams cut or
// closed for polling, resumed with Last-Event-ID.
//
//	go run ./examples/mcpcall http://127.0.0.1:8931/mcp
//	go run ./examples/mcpcall -call read_file -args '{"path":"notes.txt"}' http://127.0.0.1:8931/mcp
//
// Asked to fill in a form (elicitation/create), it accepts with the
// defaults the form's schema gives (SEP-1034), or declines with -elicit
// decline. It exits 1 if any step fails or the tool reports an error.
// What the server sends is printed with its control characters escaped
// (\x1b, \u202e): a server's text cannot drive the terminal.
// The official MCP conformance suite drives it in client mode
// (.ci/mcpconformance/run.sh).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"
)

func main() {
	tool := flag.String("call", "", "the tool to call (none: list the tools only)")
	args := flag.String("args", "{}", "the tool's arguments, a JSON object")
	version := flag.String("protocol", "2025-11-25", "the MCP revision to ask for")
	elicit := flag.String("elicit", "defaults", "how to answer elicitation/create: defaults (accept with the schema's defaults) or decline")
	timeout := flag.Duration("timeout", 30*time.Second, "bound on the whole session")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: mcpcall [-call TOOL [-args JSON]] [-elicit defaults|decline] URL\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *elicit != "defaults" && *elicit != "decline" {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cfg := config{url: flag.Arg(0), tool: *tool, args: *args, version: *version, decline: *elicit == "decline"}
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mcpcall:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	url, tool, args, version string
	decline                  bool // elicitation: decline instead of accepting the defaults
}

// errToolFailed is run's error when the tool's result says isError.
var errToolFailed = errors.New("the tool reported an error")

// run holds the session: initialize, tools/list, and tools/call of
// cfg.tool if set, printing to out.
func run(ctx context.Context, cfg config, out io.Writer) error {
	s, err := open(ctx, cfg, out)
	if err != nil {
		return err
	}
	defer s.close()
	tools, err := s.listTools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		printClean(out, "tool %s: %s\n", t.Name, t.Description)
	}
	if cfg.tool == "" {
		return nil
	}
	res, err := s.callTool(ctx, cfg.tool, cfg.args)
	if err != nil {
		return err
	}
	for _, c := range res.Content {
		printClean(out, "%s: %s\n", c.Type, c.Text)
	}
	if res.IsError {
		return errToolFailed
	}
	return nil
}
