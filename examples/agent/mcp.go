package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
)

// The host's side of the Model Context Protocol, for driving real MCP
// servers (mcpsession.go). The message types stay here, in the example:
// the jsonrpc package knows nothing of MCP beyond jsonrpc.MCPCancel.

// mcpVersion is the protocol revision the host asks for in initialize.
const mcpVersion = "2025-06-18"

type mcpImplementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type mcpInitializeResult struct {
	ProtocolVersion string            `json:"protocolVersion"`
	Capabilities    map[string]any    `json:"capabilities"`
	ServerInfo      mcpImplementation `json:"serverInfo"`
}

type mcpTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type mcpContent struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

type mcpCallResult struct {
	Content []mcpContent `json:"content"`
	IsError bool         `json:"isError,omitempty"`
}

// text returns the result's text blocks, one a line.
func (r *mcpCallResult) text() string {
	var lines []string
	for _, c := range r.Content {
		if c.Type == "text" {
			lines = append(lines, c.Text)
		}
	}
	return strings.Join(lines, "\n")
}

type mcpProgress struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         float64         `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

type mcpLogMessage struct {
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

type mcpRoot struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

type mcpSamplingMessage struct {
	Role    string     `json:"role"`
	Content mcpContent `json:"content"`
}

type mcpCreateMessageParams struct {
	Messages     []mcpSamplingMessage `json:"messages"`
	SystemPrompt string               `json:"systemPrompt,omitempty"`
	MaxTokens    int                  `json:"maxTokens"`
}

type mcpCreateMessageResult struct {
	Role       string     `json:"role"`
	Content    mcpContent `json:"content"`
	Model      string     `json:"model"`
	StopReason string     `json:"stopReason"`
}

type mcpElicitParams struct {
	Message         string `json:"message"`
	RequestedSchema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	} `json:"requestedSchema"`
}

type mcpElicitResult struct {
	Action  string         `json:"action"` // accept, decline or cancel
	Content map[string]any `json:"content,omitempty"`
}

// stubModel is the host's language model for sampling/createMessage: it
// answers deterministically, from the prompt alone, so that a test can
// tell its words in a server's result.
func stubModel(p mcpCreateMessageParams) mcpCreateMessageResult {
	var prompt string
	if n := len(p.Messages); n > 0 {
		prompt = p.Messages[n-1].Content.Text
	}
	return mcpCreateMessageResult{
		Role:       "assistant",
		Model:      "stub-model-1",
		StopReason: "endTurn",
		Content:    mcpContent{Type: "text", Text: fmt.Sprintf("stub model: %d words received", len(strings.Fields(prompt)))},
	}
}

// mcpServer is an MCP server running as a child process, and the host's
// Peer on it.
type mcpServer struct {
	name string
	h    *host
	pid  int
	conn *stdio.Conn // over stdio
	peer *jsonrpc.Peer

	cmd        *exec.Cmd     // over Streamable HTTP: the server's process
	stderrDone chan struct{} // closed once its stderr is read to the end

	mu   sync.Mutex
	logs []string // notifications/message, as printed

	closeOnce sync.Once
	state     *os.ProcessState
	closeErr  error
}

// startMCP starts an MCP server, node running script with args, and serves
// its callbacks: roots/list answers roots, sampling/createMessage the stub
// model, elicitation/create a stub user who fills in what is required.
func (h *host) startMCP(name string, roots []mcpRoot, node string, args ...string) (*mcpServer, error) {
	cmd := exec.Command(node, args...)
	cmd.Stderr = prefixWriter{h.out, "    stderr " + name + ": "}
	conn, err := stdio.Command(cmd, stdio.Options{Framing: stdio.Line, GracePeriod: mcpCloseGrace})
	if err != nil {
		return nil, fmt.Errorf("starting MCP server %s: %w", name, err)
	}
	s := &mcpServer{name: name, h: h, pid: cmd.Process.Pid, conn: conn}
	s.peer = jsonrpc.NewPeer(conn, jsonrpc.Options{
		Handler: s.handler(roots),
		Logger:  h.log.With("mcp", name),
		Cancel:  jsonrpc.MCPCancel,
		// _meta.progressToken in each tools/call, and its
		// notifications/progress routed to the call (see callTool).
		Progress: jsonrpc.MCPProgress,
	})
	h.out.printf("  started MCP server %s (pid %d): %s %s\n", name, s.pid, "node", strings.Join(args, " "))
	return s, nil
}

// handler returns what the host serves to the MCP server s.
func (s *mcpServer) handler(roots []mcpRoot) *jsonrpc.Mux {
	out := s.h.out
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "ping", func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil })
	jsonrpc.Register(mux, "roots/list", func(context.Context, struct{}) (map[string][]mcpRoot, error) {
		out.printf("    <- %s calls roots/list: answered %s\n", s.name, roots[0].URI)
		return map[string][]mcpRoot{"roots": roots}, nil
	})
	jsonrpc.Register(mux, "sampling/createMessage", func(_ context.Context, p mcpCreateMessageParams) (mcpCreateMessageResult, error) {
		res := stubModel(p)
		out.printf("    <- %s calls sampling/createMessage (%d message(s), maxTokens %d): the stub model answers %q\n",
			s.name, len(p.Messages), p.MaxTokens, res.Content.Text)
		return res, nil
	})
	jsonrpc.Register(mux, "elicitation/create", func(_ context.Context, p mcpElicitParams) (mcpElicitResult, error) {
		content := map[string]any{}
		for _, field := range p.RequestedSchema.Required {
			content[field] = stubAnswer(field)
		}
		if _, ok := p.RequestedSchema.Properties["check"]; ok {
			content["check"] = true
		}
		out.printf("    <- %s calls elicitation/create %q (%d fields, required %v): the stub user accepts with %v\n",
			s.name, p.Message, len(p.RequestedSchema.Properties), p.RequestedSchema.Required, content)
		return mcpElicitResult{Action: "accept", Content: content}, nil
	})
	jsonrpc.Register(mux, "notifications/message", func(_ context.Context, p mcpLogMessage) (any, error) {
		var data any = string(p.Data)
		var str string
		if json.Unmarshal(p.Data, &str) == nil {
			data = str
		}
		line := fmt.Sprintf("[%s] %v", p.Level, data)
		s.mu.Lock()
		s.logs = append(s.logs, line)
		s.mu.Unlock()
		out.printf("    <- %s log %s\n", s.name, line)
		return nil, nil
	})
	return mux
}

// stubAnswer is what the stub user types into a required field.
func stubAnswer(field string) string {
	if field == "name" {
		return "Ada Lovelace"
	}
	return "yes"
}

// initialize runs MCP's handshake, declaring the callbacks the host serves.
func (s *mcpServer) initialize(ctx context.Context) (mcpInitializeResult, error) {
	var res mcpInitializeResult
	err := s.peer.Call(ctx, "initialize", map[string]any{
		"protocolVersion": mcpVersion,
		"capabilities": map[string]any{
			"roots":       map[string]bool{"listChanged": true},
			"sampling":    struct{}{},
			"elicitation": struct{}{},
		},
		"clientInfo": mcpImplementation{Name: "peerwire-agent", Version: "0.1.0"},
	}, &res)
	if err != nil {
		return res, fmt.Errorf("%s: initialize: %w", s.name, err)
	}
	if err := s.peer.Notify(ctx, "notifications/initialized", nil); err != nil {
		return res, fmt.Errorf("%s: notifications/initialized: %w", s.name, err)
	}
	s.h.out.printf("  %s: initialized, %s %s, protocol %s\n", s.name, res.ServerInfo.Name, res.ServerInfo.Version, res.ProtocolVersion)
	return res, nil
}

// listTools returns the names of the server's tools.
func (s *mcpServer) listTools(ctx context.Context) ([]string, error) {
	var res struct {
		Tools []mcpTool `json:"tools"`
	}
	if err := s.peer.Call(ctx, "tools/list", nil, &res); err != nil {
		return nil, fmt.Errorf("%s: tools/list: %w", s.name, err)
	}
	names := make([]string, len(res.Tools))
	for i, t := range res.Tools {
		names[i] = t.Name
	}
	return names, nil
}

// callTool calls a tool and returns its result and the progress
// notifications that arrived for it. jsonrpc.MCPProgress gives the call a
// progress token of its own in _meta, and every progress notification for
// it that arrives before the reply has been seen, in order, when the Call
// returns: nothing to wait for afterwards. onProgress, if not nil, sees
// each as it arrives.
func (s *mcpServer) callTool(ctx context.Context, name string, args any, onProgress func(mcpProgress)) (mcpCallResult, []mcpProgress, error) {
	var got []mcpProgress
	ctx = jsonrpc.WithProgress(ctx, func(params json.RawMessage) {
		var p mcpProgress
		if err := json.Unmarshal(params, &p); err != nil {
			s.h.log.Info("malformed progress", "mcp", s.name, "params", string(params))
			return
		}
		s.h.out.printf("    <- %s progress %s: %g/%g %s\n", s.name, p.ProgressToken, p.Progress, p.Total, p.Message)
		got = append(got, p)
		if onProgress != nil {
			onProgress(p)
		}
	})
	var res mcpCallResult
	err := s.peer.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": args}, &res)
	return res, got, err
}

// logLines returns the notifications/message the server has sent.
func (s *mcpServer) logLines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.logs...)
}

// mcpCloseGrace is how long closing an MCP server waits for it to exit
// once its stdin is closed, as the stdio transport's shutdown asks, before
// killing it. server-everything keeps running (its timers hold Node's
// event loop), so it is killed.
const mcpCloseGrace = time.Second

// close closes the server's stdin, waits for it to exit (killing it after
// mcpCloseGrace) and returns its exit state and what closing reported.
func (s *mcpServer) close() (*os.ProcessState, error) {
	s.closeOnce.Do(func() {
		if s.cmd != nil {
			s.state, s.closeErr = s.stopHTTP()
			return
		}
		s.peer.Close()
		s.peer.Wait()
		s.closeErr = s.conn.Close()
		s.state = s.conn.ProcessState()
	})
	return s.state, s.closeErr
}

// crashed reports whether err says the server's process ended.
func crashed(err error) (*exec.ExitError, bool) {
	var exit *exec.ExitError
	return exit, errors.Is(err, jsonrpc.ErrClosed) && errors.As(err, &exit)
}

// prefixWriter writes a child's stderr into the transcript, each line
// prefixed.
type prefixWriter struct {
	t      *transcript
	prefix string
}

func (w prefixWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w.t.printf("%s%s\n", w.prefix, line)
	}
	return len(p), nil
}
