package stdio_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync/atomic"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
)

// An LSP-style server: JSON-RPC over stdin and stdout with LSP's
// Content-Length header framing (the default). A real server uses
// stdio.Stdio() and blocks in peer.Wait(); here the editor's side is this
// function, writing and reading the framed bytes itself over pipes.
func Example_languageServer() {
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "initialize", func(ctx context.Context, p map[string]any) (any, error) {
		return map[string]any{"capabilities": map[string]any{"hoverProvider": true}}, nil
	})
	var opened string
	jsonrpc.RegisterNotification(mux, "textDocument/didOpen", func(ctx context.Context, p struct {
		TextDocument struct{ URI string }
	}) error {
		opened = p.TextDocument.URI
		return nil
	})
	jsonrpc.Register(mux, "textDocument/hover", func(ctx context.Context, p map[string]any) (string, error) {
		return "hovering in " + opened, nil // runs after the didOpen sent before it
	})
	stdinR, stdinW := io.Pipe()   // editor -> server
	stdoutR, stdoutW := io.Pipe() // server -> editor
	server := jsonrpc.NewPeer(stdio.NewConn(stdinR, stdoutW), jsonrpc.Options{
		Handler: mux,
		Cancel:  jsonrpc.LSPCancel,
	})

	// The editor.
	send := func(msg string) { fmt.Fprintf(stdinW, "Content-Length: %d\r\n\r\n%s", len(msg), msg) }
	replies := bufio.NewReader(stdoutR)
	receive := func() string {
		var n int
		header, _ := replies.ReadString('\n')
		fmt.Sscanf(header, "Content-Length: %d", &n)
		replies.ReadString('\n') // the blank line
		body := make([]byte, n)
		io.ReadFull(replies, body)
		return string(body)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null}}`)
	fmt.Println(receive())
	send(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///a.go"}}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"textDocument/hover","params":{}}`)
	fmt.Println(receive())

	stdinW.Close() // the editor goes away: the server ends cleanly
	fmt.Println(server.Wait())
	stdoutR.Close()
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"capabilities":{"hoverProvider":true}}}
	// {"jsonrpc":"2.0","id":2,"result":"hovering in file:///a.go"}
	// <nil>
}

// A child process spoken to one message per line, as MCP's stdio transport
// does: Command starts it and Close ends it (stdin closed, then, after a
// grace period, SIGTERM and SIGKILL to its process group). Here the child
// is this test binary acting as a tool (see TestMain); a program names its
// tool instead: exec.Command("mytool", "--stdio").
func ExampleCommand() {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "STDIO_TEST_CHILD=example-tool")
	conn, err := stdio.Command(cmd, stdio.Options{Framing: stdio.Line})
	if err != nil {
		fmt.Println(err)
		return
	}
	tool := jsonrpc.NewPeer(conn)

	var s string
	err = tool.Call(context.Background(), "upper", []string{"hello, child"}, &s)
	fmt.Println(s, err)
	fmt.Println(tool.Close()) // the child's exit: nil for status 0
	// Output:
	// HELLO, CHILD <nil>
	// <nil>
}

// A language server's shutdown and exit, with Serve and Exit: LSP's exit
// notification ends the process with status 0 if shutdown came first, 1
// otherwise. A real server's main is os.Exit(stdio.Serve(stdio.Stdio(),
// opts)); here the editor is a Peer over a pipe.
func ExampleServe() {
	var shutdown atomic.Bool
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "shutdown", func(ctx context.Context, _ struct{}) (any, error) {
		shutdown.Store(true)
		return nil, nil
	})
	jsonrpc.RegisterNotification(mux, "exit", func(ctx context.Context, _ struct{}) error {
		code := 1
		if shutdown.Load() {
			code = 0
		}
		return stdio.Exit(ctx, code)
	})
	a, b := net.Pipe()
	status := make(chan int, 1)
	go func() { status <- stdio.Serve(stdio.NewConn(a, a), jsonrpc.Options{Handler: mux}) }()

	editor := jsonrpc.NewPeer(stdio.NewConn(b, b))
	defer editor.Close()
	ctx := context.Background()
	fmt.Println(editor.Call(ctx, "shutdown", nil, nil))
	fmt.Println(editor.Notify(ctx, "exit", nil))
	fmt.Println("exit status", <-status)
	// Output:
	// <nil>
	// <nil>
	// exit status 0
}
