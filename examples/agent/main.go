// Command agent is a desktop agent host that embeds tools as child processes
// and talks JSON-RPC 2.0 to each over the child's stdin and stdout with line
// framing (newline-delimited JSON, as the Model Context Protocol's stdio
// transport does). Both directions share the one pipe: the host calls the
// tools, and the tools call back into the host while answering.
//
//	go run ./examples/agent
//
// prints a transcript of a session and exits 0. The binary plays every role:
// with no flag it is the host, which starts itself twice as tools:
//
//	agent -tool files   # files.read and files.delete, which call back the host
//	agent -tool flaky   # flaky.echo, and flaky.crash, which exits with status 3
//
// The host keeps the files in an in-memory sandbox (host.readFile) and decides
// what may be deleted (host.confirm refuses anything under /etc). It lists the
// tools' methods, calls them, sends a batch, sees flaky crash mid-call (the
// call fails with jsonrpc.ErrClosed and the child's exit status is reported),
// restarts flaky after a backoff and calls it again, gives up on it after
// three crashes within ten seconds (supervise.go), and goes on using files,
// then closes both tools and reaps them.
//
// Every call to a tool carries a token that the host hands the tool in the
// AGENT_TOOL_TOKEN environment variable; a tool's interceptor refuses calls
// without it (code -32010). The host logs each of its outbound calls with
// log/slog through an interceptor.
//
// With -mcp, the host drives real MCP servers instead, the reference
// servers @modelcontextprotocol/server-everything and server-filesystem
// (npm packages; Node.js is the only prerequisite):
//
//	(cd .ci/mcp && npm ci) && go run ./examples/agent -mcp .ci/mcp/node_modules
//
// It initializes each (declaring roots, sampling and elicitation), lists and
// calls their tools, answers their roots/list, sampling/createMessage (a
// deterministic stub model) and elicitation/create (a stub user) while its
// own call is still running, prints notifications/progress and
// notifications/message as they arrive, cancels a long operation with
// notifications/cancelled, and reports a server that crashes at start
// (mcpsession.go). It runs server-everything's session twice: over stdio,
// and over Streamable HTTP, starting it in that mode and reaching it with
// httprpc.Dial as a remote agent would (mcphttp.go).
//
// Both ends cancel calls as MCP does (jsonrpc.MCPCancel): a call whose ctx
// ends before its reply is followed by notifications/cancelled naming its
// id, which cancels the handler's ctx on the other side, and with it any
// callback that handler is waiting for. Cancellations carry no token: they
// can only end a call early, never start anything.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	toolName := flag.String("tool", "", "serve the named tool (files or flaky) over stdin/stdout, as the host starts it")
	mcpModules := flag.String("mcp", "", "drive the reference MCP servers installed under this node_modules directory instead (see mcpsession.go)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: agent [-tool files|flaky | -mcp NODE_MODULES]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}

	var err error
	switch {
	case *toolName != "" && *mcpModules != "":
		err = usageError("-tool and -mcp exclude each other")
	case *toolName != "":
		err = runTool(*toolName)
	case *mcpModules != "":
		err = runMCP(os.Stdout, *mcpModules)
	default:
		err = runHost(os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent: %v\n", err)
		if _, usage := err.(usageError); usage {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is an error in how the program was invoked: exit status 2.
type usageError string

func (e usageError) Error() string { return string(e) }
