// Command tools is the README's third guide: a tool server for agents,
// speaking the Model Context Protocol's messages over standard input and
// output (one message per line, as an agent that starts it as a child
// process expects) or, with -http, over MCP's Streamable HTTP transport
// at /mcp. Its one tool, count_words, reports progress while it counts.
//
//	go run ./examples/guide/tools                       # speak MCP on its stdin
//	go run ./examples/guide/tools -http 127.0.0.1:8931  # or at http://127.0.0.1:8931/mcp
//
// examples/guide/toolclient is a client of it. examples/mcptool is a
// fuller server of the same kind.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
	"github.com/peerwire/jsonrpc/stdio"
)

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP at this address's /mcp instead of stdio")
	flag.Parse()
	if *addr == "" {
		os.Exit(stdio.Serve(stdio.Stdio(stdio.Options{Framing: stdio.Line}), options()))
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", &httprpc.SessionServer{Peer: options()}) // a Peer per session
	log.Printf("tools: serving http://%s/mcp", *addr)
	log.Fatal(httprpc.NewHTTPServer(*addr, mux).ListenAndServe())
}

// options are the Peer's, the same on both transports: MCP's cancellation
// (notifications/cancelled) and progress (_meta.progressToken), which a
// client must set too.
func options() jsonrpc.Options {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "initialize", initialize)
	jsonrpc.RegisterNotification(mux, "notifications/initialized", func(context.Context, any) error { return nil })
	jsonrpc.Register(mux, "tools/list", listTools)
	jsonrpc.Register(mux, "tools/call", callTool)
	return jsonrpc.Options{Handler: mux, Cancel: jsonrpc.MCPCancel, Progress: jsonrpc.MCPProgress}
}

// InitializeParams and the types below are the part of MCP this server
// uses; docs/mcp-lsp-types.md says how to use the MCP SDK's types instead.
type InitializeParams struct {
	ProtocolVersion string `json:"protocolVersion"`
}

func initialize(ctx context.Context, p InitializeParams) (map[string]any, error) {
	version := "2025-11-25"
	if p.ProtocolVersion == "2025-06-18" || p.ProtocolVersion == "2025-03-26" {
		version = p.ProtocolVersion // one we speak: agree to it
	}
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{}},
		"serverInfo":      map[string]string{"name": "tools", "version": "1"},
	}, nil
}

func listTools(ctx context.Context, _ any) (map[string]any, error) {
	return map[string]any{"tools": []map[string]any{{
		"name":        "count_words",
		"description": "Counts the words of a text.",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]string{"type": "string"}}, "required": []string{"text"}},
	}}}, nil
}

// CallToolParams are tools/call's params; ToolResult its result.
type CallToolParams struct {
	Name      string `json:"name"`
	Arguments struct {
		Text string `json:"text"`
	} `json:"arguments"`
}

type ToolResult struct {
	Content []Content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

type Content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// callTool runs count_words, reporting progress line by line to the
// caller's progressToken, if it gave one. A tool's own failure is a
// result with isError, as MCP says; an unknown tool is a protocol error.
func callTool(ctx context.Context, p CallToolParams) (ToolResult, error) {
	if p.Name != "count_words" {
		return ToolResult{}, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "unknown tool: "+p.Name, nil)
	}
	lines := strings.Split(p.Arguments.Text, "\n")
	words := 0
	for i, line := range lines {
		if err := ctx.Err(); err != nil {
			return ToolResult{}, err // the agent cancelled
		}
		words += len(strings.Fields(line))
		if err := jsonrpc.ReportProgress(ctx, map[string]any{"progress": i + 1, "total": len(lines)}); err != nil {
			return ToolResult{}, err
		}
	}
	return ToolResult{Content: []Content{{Type: "text", Text: fmt.Sprint(words)}}}, nil
}
