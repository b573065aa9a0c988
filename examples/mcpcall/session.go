package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/httprpc"
)

// session is an MCP session over Streamable HTTP.
type session struct {
	peer *jsonrpc.Peer
	out  io.Writer
	mu   sync.Mutex // out, written by the handlers too
}

// tool is an entry of tools/list.
type tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// toolResult is tools/call's result.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// open dials cfg.url and runs MCP's handshake: initialize, then
// notifications/initialized.
func open(ctx context.Context, cfg config, out io.Writer) (*session, error) {
	s := &session{out: out}
	p, err := httprpc.Dial(ctx, cfg.url, httprpc.DialOptions{
		ProtocolVersion: cfg.version,
		Peer: jsonrpc.Options{
			Handler:  s.handler(cfg.decline),
			Cancel:   jsonrpc.MCPCancel,
			Progress: jsonrpc.MCPProgress,
		},
	})
	if err != nil {
		return nil, err
	}
	s.peer = p
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct{ Name, Version string }
	}
	err = p.Call(ctx, "initialize", map[string]any{
		"protocolVersion": cfg.version,
		"capabilities":    map[string]any{"elicitation": map[string]any{}},
		"clientInfo":      map[string]string{"name": "mcpcall", "version": "0.1.0"},
	}, &init)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	s.printf("server %s %s, protocol %s\n", init.ServerInfo.Name, init.ServerInfo.Version, init.ProtocolVersion)
	if err := p.Notify(ctx, "notifications/initialized", nil); err != nil {
		s.close()
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	return s, nil
}

// close deletes the session (httprpc.Dial's Peer sends DELETE).
func (s *session) close() {
	s.peer.Close()
	_ = s.peer.Wait()
}

// printf prints what came from the server, control characters escaped.
func (s *session) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	printClean(s.out, format, args...)
}

// listTools returns the server's tools.
func (s *session) listTools(ctx context.Context) ([]tool, error) {
	var res struct{ Tools []tool }
	if err := s.peer.Call(ctx, "tools/list", map[string]any{}, &res); err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	return res.Tools, nil
}

// callTool calls name with args, a JSON object, printing its progress.
func (s *session) callTool(ctx context.Context, name, args string) (toolResult, error) {
	var res toolResult
	if !json.Valid([]byte(args)) {
		return res, fmt.Errorf("-args %q: not JSON", args)
	}
	ctx = jsonrpc.WithProgress(ctx, func(v json.RawMessage) { s.printf("progress %s\n", v) })
	err := s.peer.Call(ctx, "tools/call", map[string]any{"name": name, "arguments": json.RawMessage(args)}, &res)
	if err != nil {
		return res, fmt.Errorf("tools/call %s: %w", name, err)
	}
	return res, nil
}

// handler serves what the server asks of the client while a call runs.
func (s *session) handler(decline bool) *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "ping", func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil })
	jsonrpc.Register(m, "elicitation/create", func(_ context.Context, p elicitParams) (elicitResult, error) {
		if decline {
			s.printf("elicitation %q: declined\n", p.Message)
			return elicitResult{Action: "decline"}, nil
		}
		content := p.defaults()
		s.printf("elicitation %q: accepted with the defaults %v\n", p.Message, content)
		return elicitResult{Action: "accept", Content: content}, nil
	})
	m.HandleFunc("notifications/message", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		s.printf("log %s\n", r.Params)
		return nil, nil
	})
	return m
}

// elicitParams are elicitation/create's params: a message and a flat
// JSON Schema of the form's fields.
type elicitParams struct {
	Message         string `json:"message"`
	RequestedSchema struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	} `json:"requestedSchema"`
}

// defaults are the form's fields that have a default, filled with it.
func (p elicitParams) defaults() map[string]json.RawMessage {
	content := map[string]json.RawMessage{}
	for name, field := range p.RequestedSchema.Properties {
		if len(field.Default) > 0 {
			content[name] = field.Default
		}
	}
	return content
}

// elicitResult is elicitation/create's result.
type elicitResult struct {
	Action  string                     `json:"action"`
	Content map[string]json.RawMessage `json:"content,omitempty"`
}
