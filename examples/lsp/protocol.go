package main

import "encoding/json"

// The few Language Server Protocol 3.17 types this server needs, named as
// the specification names them. Positions count UTF-16 code units, the
// protocol's default (and here only) position encoding.

// Error codes LSP adds to JSON-RPC's. InvalidRequest (-32600) and
// RequestCancelled (-32800) are jsonrpc.CodeInvalidRequest and
// jsonrpc.CodeRequestCancelled.
const (
	codeServerNotInitialized = -32002
)

// Method names.
const (
	methodInitialize         = "initialize"
	methodInitialized        = "initialized"
	methodShutdown           = "shutdown"
	methodExit               = "exit"
	methodDidOpen            = "textDocument/didOpen"
	methodDidChange          = "textDocument/didChange"
	methodDidClose           = "textDocument/didClose"
	methodHover              = "textDocument/hover"
	methodPublishDiagnostics = "textDocument/publishDiagnostics"
	methodSlowCount          = "custom/slowCount"
	methodDocumentSymbol     = "textDocument/documentSymbol"
)

// Position is a zero-based line and a character offset in UTF-16 code units.
type Position struct {
	Line      uint32 `json:"line"`
	Character uint32 `json:"character"`
}

// Range is a half-open span [Start, End).
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

type TextDocumentIdentifier struct {
	URI string `json:"uri"`
}

type VersionedTextDocumentIdentifier struct {
	URI     string `json:"uri"`
	Version int32  `json:"version"`
}

type TextDocumentItem struct {
	URI        string `json:"uri"`
	LanguageID string `json:"languageId"`
	Version    int32  `json:"version"`
	Text       string `json:"text"`
}

type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// InitializeParams keeps only what the server looks at.
type InitializeParams struct {
	ProcessID    *int32             `json:"processId"`
	ClientInfo   *ClientInfo        `json:"clientInfo,omitempty"`
	Capabilities ClientCapabilities `json:"capabilities"`
}

// ClientCapabilities keeps only whether the client accepts progress that
// the server starts by itself (window/workDoneProgress/create).
type ClientCapabilities struct {
	Window struct {
		WorkDoneProgress bool `json:"workDoneProgress"`
	} `json:"window"`
}

// TextDocumentSyncKind values.
const (
	syncFull        = 1
	syncIncremental = 2
)

type ServerCapabilities struct {
	PositionEncoding string `json:"positionEncoding"`
	TextDocumentSync int    `json:"textDocumentSync"`
	HoverProvider    bool   `json:"hoverProvider"`

	DocumentSymbolProvider bool `json:"documentSymbolProvider"`
}

type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

type InitializeResult struct {
	Capabilities ServerCapabilities `json:"capabilities"`
	ServerInfo   ServerInfo         `json:"serverInfo"`
}

type DidOpenTextDocumentParams struct {
	TextDocument TextDocumentItem `json:"textDocument"`
}

// TextDocumentContentChangeEvent replaces Range with Text, or the whole
// document when Range is absent. (The deprecated rangeLength is ignored.)
type TextDocumentContentChangeEvent struct {
	Range *Range `json:"range,omitempty"`
	Text  string `json:"text"`
}

type DidChangeTextDocumentParams struct {
	TextDocument   VersionedTextDocumentIdentifier  `json:"textDocument"`
	ContentChanges []TextDocumentContentChangeEvent `json:"contentChanges"`
}

type DidCloseTextDocumentParams struct {
	TextDocument TextDocumentIdentifier `json:"textDocument"`
}

// DiagnosticSeverity values.
const (
	severityWarning     = 2
	severityInformation = 3
)

type Diagnostic struct {
	Range    Range  `json:"range"`
	Severity int    `json:"severity,omitempty"`
	Code     string `json:"code,omitempty"`
	Source   string `json:"source,omitempty"`
	Message  string `json:"message"`
}

type PublishDiagnosticsParams struct {
	URI         string       `json:"uri"`
	Version     *int32       `json:"version,omitempty"`
	Diagnostics []Diagnostic `json:"diagnostics"` // never null: [] clears
}

type TextDocumentPositionParams struct {
	TextDocument TextDocumentIdentifier `json:"textDocument"`
	Position     Position               `json:"position"`
}

type MarkupContent struct {
	Kind  string `json:"kind"` // "plaintext" or "markdown"
	Value string `json:"value"`
}

type Hover struct {
	Contents MarkupContent `json:"contents"`
	Range    *Range        `json:"range,omitempty"`
}

// SlowCountParams are the params of custom/slowCount, this server's own
// request: count the document's words after DelayMs milliseconds, unless
// cancelled first.
type SlowCountParams struct {
	TextDocument TextDocumentIdentifier `json:"textDocument"`
	DelayMs      int                    `json:"delayMs"`
}

type SlowCountResult struct {
	Words int `json:"words"`
}

// WorkDoneProgress is the value of a $/progress notification for a
// work-done token: Kind is "begin", "report" or "end".
type WorkDoneProgress struct {
	Kind        string `json:"kind"`
	Title       string `json:"title,omitempty"`
	Message     string `json:"message,omitempty"`
	Percentage  *int   `json:"percentage,omitempty"`
	Cancellable bool   `json:"cancellable,omitempty"`
}

// DocumentSymbolParams: a partialResultToken asks for the symbols in
// parts, as $/progress notifications, before an empty final result.
type DocumentSymbolParams struct {
	TextDocument       TextDocumentIdentifier `json:"textDocument"`
	PartialResultToken json.RawMessage        `json:"partialResultToken,omitempty"`
}

// SymbolKind 13 is Variable: each word of the document is one.
const symbolVariable = 13

type Location struct {
	URI   string `json:"uri"`
	Range Range  `json:"range"`
}

type SymbolInformation struct {
	Name     string   `json:"name"`
	Kind     int      `json:"kind"`
	Location Location `json:"location"`
}
