package main

import "encoding/json"

// The Model Context Protocol's messages that this server uses, as the
// specification (revision 2025-06-18, and 2025-11-25 which keeps them)
// defines them. They stay here, in the example: the jsonrpc package knows
// nothing of MCP beyond its cancellation dialect, jsonrpc.MCPCancel.

// supportedVersions are the protocol revisions this server speaks, newest
// first. A client asking for one of them gets it; any other request gets
// the newest, and the client decides whether to go on (the specification's
// version negotiation).
var supportedVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// implementation names a client or a server.
type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// clientCapabilities says which requests a client serves. Only presence
// matters here: a member present (even as {}) declares the capability.
type clientCapabilities struct {
	Roots       *json.RawMessage `json:"roots,omitempty"`
	Sampling    *json.RawMessage `json:"sampling,omitempty"`
	Elicitation *json.RawMessage `json:"elicitation,omitempty"`
}

// initializeParams are the params of initialize.
type initializeParams struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    clientCapabilities `json:"capabilities"`
	ClientInfo      implementation     `json:"clientInfo"`
}

// serverCapabilities are what this server offers: tools, and log messages.
type serverCapabilities struct {
	Tools   struct{} `json:"tools"`
	Logging struct{} `json:"logging"`
}

// initializeResult is the result of initialize.
type initializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    serverCapabilities `json:"capabilities"`
	ServerInfo      implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions,omitempty"`
}

// toolDef describes a tool in the result of tools/list.
type toolDef struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// toolsListResult is the result of tools/list.
type toolsListResult struct {
	Tools []toolDef `json:"tools"`
}

// requestMeta is the _meta member of a request's params.
type requestMeta struct {
	// ProgressToken, a string or a number, asks for notifications/progress
	// naming it; absent, the caller wants none.
	ProgressToken json.RawMessage `json:"progressToken,omitempty"`
}

// callToolParams are the params of tools/call.
type callToolParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      requestMeta     `json:"_meta"`
}

// content is one block of a tool's result or of a sampled message; only
// text here.
type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// callToolResult is the result of tools/call. IsError marks a tool's own
// failure (a missing file, say), which the model gets to read; a call that
// cannot be made at all (an unknown tool) is a JSON-RPC error instead.
type callToolResult struct {
	Content []content `json:"content"`
	IsError bool      `json:"isError,omitempty"`
}

// progressParams are the params of notifications/progress.
type progressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         float64         `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// logMessageParams are the params of notifications/message.
type logMessageParams struct {
	Level  string `json:"level"`
	Logger string `json:"logger,omitempty"`
	Data   any    `json:"data"`
}

// setLevelParams are the params of logging/setLevel.
type setLevelParams struct {
	Level string `json:"level"`
}

// root is one of the roots a client lists in reply to roots/list.
type root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// rootsListResult is the result of roots/list.
type rootsListResult struct {
	Roots []root `json:"roots"`
}

// samplingMessage is one message of a sampling/createMessage request.
type samplingMessage struct {
	Role    string  `json:"role"`
	Content content `json:"content"`
}

// createMessageParams are the params of sampling/createMessage.
type createMessageParams struct {
	Messages       []samplingMessage `json:"messages"`
	SystemPrompt   string            `json:"systemPrompt,omitempty"`
	IncludeContext string            `json:"includeContext,omitempty"`
	MaxTokens      int               `json:"maxTokens"`
}

// createMessageResult is the result of sampling/createMessage. Its content
// is one block, or (from revision 2025-11-25) an array of them.
type createMessageResult struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Model      string          `json:"model"`
	StopReason string          `json:"stopReason,omitempty"`
}

// text returns the text blocks of the sampled message, joined.
func (r *createMessageResult) text() string {
	var one content
	if json.Unmarshal(r.Content, &one) == nil {
		return one.Text
	}
	var many []content
	json.Unmarshal(r.Content, &many)
	var s string
	for _, c := range many {
		if c.Type == "text" {
			s += c.Text
		}
	}
	return s
}
