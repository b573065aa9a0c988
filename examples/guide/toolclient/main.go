// Command toolclient is a client of examples/guide/tools, as an agent
// would be: it starts the server as a child process and speaks to it over
// its stdin and stdout, or reaches it over Streamable HTTP, then calls its
// tool and prints the progress and the result.
//
//	go build -o tools ./examples/guide/tools
//	go run ./examples/guide/toolclient ./tools                         # a child process
//	go run ./examples/guide/toolclient http://127.0.0.1:8931/mcp      # a server started with -http
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
	"github.com/peerwire/jsonrpc/stdio"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: toolclient COMMAND [ARG...] | toolclient http://HOST/mcp")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Args[1:], "one two\nthree", os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "toolclient:", err)
		os.Exit(1)
	}
}

// opts are the client Peer's: MCP's dialects, as the server's.
var opts = jsonrpc.Options{Cancel: jsonrpc.MCPCancel, Progress: jsonrpc.MCPProgress}

// connect reaches the server: over HTTP for a URL, else by starting the
// command as a child process (one message per line on its stdin and
// stdout).
func connect(ctx context.Context, args []string) (*jsonrpc.Peer, error) {
	if strings.HasPrefix(args[0], "http://") || strings.HasPrefix(args[0], "https://") {
		return httprpc.Dial(ctx, args[0], httprpc.DialOptions{Peer: opts})
	}
	conn, err := stdio.Command(exec.Command(args[0], args[1:]...), stdio.Options{Framing: stdio.Line})
	if err != nil {
		return nil, err
	}
	return jsonrpc.NewPeer(conn, opts), nil
}

// run connects, initializes, calls count_words with progress and prints
// what comes back.
func run(ctx context.Context, args []string, text string, out io.Writer) error {
	p, err := connect(ctx, args)
	if err != nil {
		return err
	}
	defer p.Close() // a child: stdin closed, then waited for; HTTP: the session DELETEd

	init := map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]string{"name": "toolclient", "version": "1"}}
	if err := p.Call(ctx, "initialize", init, nil); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if err := p.Notify(ctx, "notifications/initialized", nil); err != nil {
		return err
	}
	ctx = jsonrpc.WithProgress(ctx, func(v json.RawMessage) { fmt.Fprintf(out, "progress %s\n", v) })
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	call := map[string]any{"name": "count_words", "arguments": map[string]string{"text": text}}
	if err := p.Call(ctx, "tools/call", call, &res); err != nil { // every progress printed before it returns
		return fmt.Errorf("tools/call: %w", err)
	}
	fmt.Fprintf(out, "words: %s\n", res.Content[0].Text)
	return nil
}
