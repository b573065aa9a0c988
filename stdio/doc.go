// Package stdio carries JSON-RPC 2.0 messages over byte streams: standard
// input and output, a child process's pipes, or any io.Reader and io.Writer.
// Its Conn implements jsonrpc.Conn.
//
// # Framing
//
// Two framings delimit messages on the stream, chosen by Options.Framing.
//
// Header framing, the default, is the Language Server Protocol's base
// protocol. Each message is preceded by header lines ended by an empty line:
//
//	Content-Length: 46\r\n
//	\r\n
//	{"jsonrpc":"2.0","id":1,"method":"initialize"}
//
// Content-Length is required and is a decimal byte count. Header names are
// case-insensitive, other headers such as Content-Type are ignored, and bare
// "\n" line endings are accepted. A header line may hold at most 4 KiB and a
// header block at most 64 lines.
//
// Line framing is newline-delimited JSON, as the Model Context Protocol's
// stdio transport uses: one message per line. Whitespace around a message
// (so a "\r" before the "\n") is trimmed, blank lines are skipped, and a last
// line without a newline is still a message. Lines may be of any length up
// to the size cap. Write compacts a message that contains line breaks so that
// it fits on one line.
//
// # Writing
//
// Write puts each message on the stream as one frame, in a single call to
// the writer's Write method; a frame of 16 KiB or more to a *net.TCPConn
// or *net.UnixConn goes out instead in a single vectored write (writev) of
// its header and the message itself, which copies nothing. The standard
// library's files and sockets hold a lock of their own for the whole of
// such a call, so whatever else writes to the same *os.File or net.Conn (a
// log line sent to os.Stdout by mistake, another Conn on the stream) lands
// between two frames, never inside one (TestLargeFrameIsOneWrite,
// TestLargeFramesWholeBesideAnotherWriter). Any other writer gets that
// promise from its own Write. The operating system gives no more: bytes
// that another process writes to the same pipe (a child that inherited
// it, say) may land inside any frame longer than PIPE_BUF (4 KiB on
// Linux), so give such a process a stream of its own.
//
// # Size cap
//
// Options.MaxMessageSize (32 MiB by default; negative for no cap) caps an
// incoming message. The reader never buffers more than the cap, whatever a
// header claims: a larger message is skipped as it streams in and Read
// returns an error wrapping jsonrpc.ErrMessageTooLarge, after which the Conn
// can still be read. Without a cap, a header's Content-Length is still not
// trusted: a body's buffer grows only as its bytes arrive.
//
// Read returns io.EOF when the stream ends between two messages and an
// error wrapping io.ErrUnexpectedEOF when it ends inside one.
//
// # Making a Conn
//
// NewConn works over any reader and writer, Stdio over os.Stdin and
// os.Stdout for a program launched by its peer, and Command starts a child
// process and talks to it over its standard input and output:
//
//	cmd := exec.Command("gopls")
//	conn, err := stdio.Command(cmd) // Header framing
//	if err != nil {
//		return err
//	}
//	defer conn.Close() // closes gopls's stdin, waits for it to exit (then SIGTERM, SIGKILL), reaps it
//	if err := conn.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)); err != nil {
//		return err
//	}
//	reply, err := conn.Read()
//
// A server speaking MCP over its own standard streams would use:
//
//	conn := stdio.Stdio(stdio.Options{Framing: stdio.Line})
//
// # Serving until exit
//
// Serve runs a Peer on a Conn until the other side ends the stream or a
// handler calls Exit, and returns the status for the program to exit
// with, as a language server's exit notification needs (see ExampleServe):
//
//	func main() {
//		os.Exit(stdio.Serve(stdio.Stdio(), jsonrpc.Options{Handler: mux}))
//	}
package stdio
