package main

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// server-everything over Streamable HTTP (agent -mcp): the host starts
// `node index.js streamableHttp`, which serves MCP at /mcp, and reaches it
// with httprpc.Dial, as a remote agent reaches a remote MCP server. The
// session is the same as over stdio: the server's sampling and
// elicitation requests and its progress come back on the event stream of
// the host's tools/call, its roots/list and log messages on the session's
// own stream.

// loopbackModule is loaded by node before the server (node --import): it
// makes a listen on a port alone (express's app.listen(PORT)) listen on
// 127.0.0.1 only, and prints the port it got, since server-everything is
// started with PORT=0 and prints only the 0 it was given.
const loopbackModule = `import net from 'node:net';
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (/^\d+$/.test(String(args[0])) && typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  this.once('listening', () => process.stderr.write('loopback: listening on 127.0.0.1:' + this.address().port + '\n'));
  return listen.apply(this, args);
};
`

// listeningLine is what loopbackModule prints once the server listens.
var listeningLine = regexp.MustCompile(`^loopback: listening on (127\.0\.0\.1:\d+)$`)

// mcpStartTimeout bounds how long a server over HTTP may take to listen.
const mcpStartTimeout = 15 * time.Second

// startMCPHTTP starts server-everything in its Streamable HTTP mode and
// dials it; the host serves the same callbacks as over stdio.
func (h *host) startMCPHTTP(name string, roots []mcpRoot, node, script string) (*mcpServer, error) {
	cmd := exec.Command(node, "--import", "data:text/javascript,"+url.PathEscape(loopbackModule), script, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT=0")
	cmd.Stdout = io.Discard // a line per request it receives
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting MCP server %s: %w", name, err)
	}
	s := &mcpServer{name: name, h: h, pid: cmd.Process.Pid, cmd: cmd}
	addr := make(chan string, 1)
	s.stderrDone = make(chan struct{})
	go func() { // until the child closes its stderr, which it does as it exits
		defer close(s.stderrDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				continue
			}
			h.out.printf("    stderr %s: %s\n", name, sc.Text())
		}
	}()
	var endpoint string
	select {
	case a := <-addr:
		endpoint = "http://" + a + "/mcp"
	case <-s.stderrDone:
	case <-time.After(mcpStartTimeout):
	}
	if endpoint == "" {
		s.close()
		return nil, fmt.Errorf("MCP server %s: no address on its stderr within %v", name, mcpStartTimeout)
	}
	ctx, cancel := mcpCtx()
	defer cancel()
	s.peer, err = httprpc.Dial(ctx, endpoint, httprpc.DialOptions{
		ProtocolVersion: mcpVersion,
		Peer: jsonrpc.Options{
			Handler:  s.handler(roots),
			Logger:   h.log.With("mcp", name),
			Cancel:   jsonrpc.MCPCancel,
			Progress: jsonrpc.MCPProgress,
		},
	})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("MCP server %s: %w", name, err)
	}
	h.out.printf("  started MCP server %s (pid %d): node %s streamableHttp, over Streamable HTTP at %s\n",
		name, s.pid, script[strings.LastIndex(script, "@modelcontextprotocol/"):], endpoint)
	return s, nil
}

// stopHTTP ends a server started by startMCPHTTP: the session first
// (Close sends DELETE), then the process, which does not exit by itself:
// SIGTERM, and SIGKILL after mcpCloseGrace.
func (s *mcpServer) stopHTTP() (*os.ProcessState, error) {
	if s.peer != nil {
		s.peer.Close()
		s.peer.Wait()
	}
	s.cmd.Process.Signal(os.Interrupt)
	exited := make(chan error, 1)
	go func() {
		<-s.stderrDone // Wait must not close the pipe under the reader
		exited <- s.cmd.Wait()
	}()
	var err error
	select {
	case err = <-exited:
	case <-time.After(mcpCloseGrace):
		s.cmd.Process.Kill()
		err = <-exited
	}
	if _, ok := err.(*exec.ExitError); ok {
		err = nil // a signal's status: ProcessState says it
	}
	return s.cmd.ProcessState, err
}

// everythingOverHTTP runs the session of everything over Streamable HTTP.
func (h *host) everythingOverHTTP(roots []mcpRoot, node, script string) (*mcpServer, error) {
	s, err := h.startMCPHTTP("everything-http", roots, node, script)
	if err != nil {
		return nil, err
	}
	if err := h.everything(s); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}
