package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// maxDelay bounds custom/slowCount's delayMs.
const maxDelay = time.Minute

// document is an open text document.
type document struct {
	version int32
	text    string
}

// phase is where the server is in LSP's lifecycle.
type phase int

const (
	phaseNew      phase = iota // before initialize
	phaseRunning               // after initialize
	phaseShutdown              // after shutdown
)

func (p phase) String() string {
	return [...]string{"new", "running", "shutdown"}[p]
}

// server holds the state of the language server: where it is in the
// lifecycle, and the open documents.
type server struct {
	log *slog.Logger

	mu    sync.Mutex
	phase phase                // set by the initialize and shutdown handlers
	docs  map[string]*document // by URI

	// clientProgress: the client accepts window/workDoneProgress/create.
	clientProgress bool

	// exit is signalled when the exit notification comes; it has room for
	// one. main decides the exit status once the requests that arrived
	// before exit have been served (see serve).
	exit chan struct{}
}

func newServer(log *slog.Logger) *server {
	return &server{
		log:  log,
		docs: make(map[string]*document),
		exit: make(chan struct{}, 1),
	}
}

// register adds the server's methods to mux.
func (s *server) register(mux *jsonrpc.Mux) {
	jsonrpc.Register(mux, methodInitialize, s.initialize)
	jsonrpc.Register(mux, methodInitialized, s.initialized)
	jsonrpc.Register(mux, methodShutdown, s.shutdown)
	jsonrpc.Register(mux, methodExit, s.exitNotification)
	jsonrpc.Register(mux, methodDidOpen, s.didOpen)
	jsonrpc.Register(mux, methodDidChange, s.didChange)
	jsonrpc.Register(mux, methodDidClose, s.didClose)
	jsonrpc.Register(mux, methodHover, s.hover)
	jsonrpc.Register(mux, methodSlowCount, s.slowCount)
	jsonrpc.Register(mux, methodDocumentSymbol, s.documentSymbol)
}

// current returns the phase the server is in.
func (s *server) current() phase {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phase
}

// exitStatus is the status LSP asks for on exit: 0 once shutdown has been
// handled, else 1.
func (s *server) exitStatus() int {
	if s.current() == phaseShutdown {
		return 0
	}
	return 1
}

// lifecycle is the Interceptor that applies LSP's lifecycle to what comes
// in: a request before initialize gets ServerNotInitialized, one after
// shutdown InvalidRequest, and a notification at those times is dropped,
// except exit.
//
// It judges each message by the phase the handlers have set when the Peer
// runs it. That is the phase it arrived in, for an editor that keeps to
// LSP: it sends nothing but initialize until initialize has been answered,
// and nothing but exit once shutdown has been answered, and the handlers
// set the phase before they return, so before the answer is written. A
// notification that arrives before initialize is judged before initialize
// runs even when the two come back to back: the Peer starts a call only
// once the notifications that arrived before it have been handled (see
// "Concurrency" in the package documentation of jsonrpc).
func (s *server) lifecycle(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
	if info.Outbound {
		return next(ctx)
	}
	p := s.current()
	if info.ID.IsZero() { // a notification
		if p != phaseRunning && info.Method != methodExit {
			s.log.Debug("dropped a notification", "method", info.Method, "phase", p)
			return nil, nil
		}
		return next(ctx)
	}
	switch {
	case p == phaseNew && info.Method != methodInitialize:
		return nil, jsonrpc.NewError(codeServerNotInitialized, "ServerNotInitialized: initialize must come first", nil)
	case p == phaseShutdown:
		return nil, errShutDown
	}
	return next(ctx)
}

var errShutDown = jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "InvalidRequest: the server has shut down", nil)

// initialize moves the server to phaseRunning. It checks the phase itself,
// under the lock, so that of two initialize requests in flight at once
// (the Peer runs calls concurrently) only one succeeds.
func (s *server) initialize(ctx context.Context, p InitializeParams) (*InitializeResult, error) {
	s.mu.Lock()
	ph := s.phase
	if ph == phaseNew {
		s.phase = phaseRunning
		s.clientProgress = p.Capabilities.Window.WorkDoneProgress
	}
	s.mu.Unlock()
	switch ph {
	case phaseRunning:
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "InvalidRequest: initialize may be sent only once", nil)
	case phaseShutdown:
		return nil, errShutDown
	}
	if p.ClientInfo != nil {
		s.log.Info("initialize", "client", p.ClientInfo.Name, "clientVersion", p.ClientInfo.Version)
	}
	return &InitializeResult{
		Capabilities: ServerCapabilities{
			PositionEncoding: "utf-16",
			TextDocumentSync: syncIncremental,
			HoverProvider:    true,

			DocumentSymbolProvider: true,
		},
		ServerInfo: ServerInfo{Name: serverName, Version: serverVersion},
	}, nil
}

// The methods without params take json.RawMessage, which accepts whatever
// params a client sends (some send [null]) and ignores them.

func (s *server) initialized(ctx context.Context, _ json.RawMessage) (any, error) {
	return nil, nil
}

// shutdown moves the server to phaseShutdown: from then on requests are
// refused, and exit ends the process with status 0.
func (s *server) shutdown(ctx context.Context, _ json.RawMessage) (any, error) {
	s.mu.Lock()
	s.phase = phaseShutdown
	s.mu.Unlock()
	return nil, nil // the result is null
}

// exitNotification tells main to end the process. It does not end the
// Peer itself, nor wait for anything, nor decide the status: a shutdown
// request sent just before it may not have run yet.
func (s *server) exitNotification(ctx context.Context, _ json.RawMessage) (any, error) {
	select {
	case s.exit <- struct{}{}:
	default: // a second exit: the first one is being acted on
	}
	return nil, nil
}

// didOpen, didChange and didClose are notifications. The Peer runs
// notifications one at a time, in the order they arrived, and starts a
// call only once the notifications that arrived before it have been
// handled (the default, without Options.ConcurrentNotifications; see
// "Concurrency" in the package documentation of jsonrpc). This server
// relies on both, and needs no locking or sequencing of its own for them:
//
//   - each didChange is applied to the text the previous one left, since
//     the one before it has returned when it starts; and the diagnostics
//     go out in version order, since each handler writes its
//     publishDiagnostics (Notify, which waits for no reply) before it
//     returns;
//   - a hover (or slowCount) sent right after a run of didChange, without
//     waiting for anything, sees every one of them: it starts only once
//     they have all been handled. It may also see changes that arrived
//     after it, which run concurrently with it; s.mu keeps that safe.

func (s *server) didOpen(ctx context.Context, p DidOpenTextDocumentParams) (any, error) {
	d := p.TextDocument
	s.mu.Lock()
	s.docs[d.URI] = &document{version: d.Version, text: d.Text}
	s.mu.Unlock()
	return nil, s.publish(ctx, d.URI, d.Version, d.Text)
}

func (s *server) didChange(ctx context.Context, p DidChangeTextDocumentParams) (any, error) {
	uri := p.TextDocument.URI
	s.mu.Lock()
	doc, ok := s.docs[uri]
	if !ok {
		s.mu.Unlock()
		s.log.Warn("didChange for a document that is not open", "uri", uri)
		return nil, nil
	}
	doc.text = applyChanges(doc.text, p.ContentChanges)
	doc.version = p.TextDocument.Version
	text := doc.text
	s.mu.Unlock()
	return nil, s.publish(ctx, uri, p.TextDocument.Version, text)
}

func (s *server) didClose(ctx context.Context, p DidCloseTextDocumentParams) (any, error) {
	uri := p.TextDocument.URI
	s.mu.Lock()
	_, ok := s.docs[uri]
	delete(s.docs, uri)
	s.mu.Unlock()
	if !ok {
		return nil, nil
	}
	// A closed document has no diagnostics: clear them.
	return nil, jsonrpc.PeerFromContext(ctx).Notify(ctx, methodPublishDiagnostics,
		PublishDiagnosticsParams{URI: uri, Diagnostics: []Diagnostic{}})
}

// publish sends the diagnostics of one version of a document to the
// client. The notification handlers call it, so each publish is written
// before the next notification is handled.
func (s *server) publish(ctx context.Context, uri string, version int32, text string) error {
	return jsonrpc.PeerFromContext(ctx).Notify(ctx, methodPublishDiagnostics,
		PublishDiagnosticsParams{URI: uri, Version: &version, Diagnostics: diagnose(text)})
}

// text returns the current text of an open document, or the error that
// answers a request about a document that is not open.
func (s *server) text(uri string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, ok := s.docs[uri]
	if !ok {
		return "", jsonrpc.NewError(jsonrpc.CodeInvalidParams, "document not open", uri)
	}
	return doc.text, nil
}

// hover answers from the text as it is when the hover starts, which
// includes every didChange sent before it (see didOpen).
func (s *server) hover(ctx context.Context, p TextDocumentPositionParams) (*Hover, error) {
	text, err := s.text(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	h := hoverAt(text, p.Position)
	return &h, nil
}

// slowCount counts the words of a document as it is when the request
// starts, after a delay, and reports work-done progress meanwhile: against
// the client's workDoneToken if it gave one, else, if the client accepts
// it, a token the server creates (window/workDoneProgress/create). It
// honours ctx: when the client cancels the request ($/cancelRequest), ctx
// ends, and returning ctx.Err() makes the Peer answer RequestCancelled
// (-32800).
func (s *server) slowCount(ctx context.Context, p SlowCountParams) (*SlowCountResult, error) {
	delay := time.Duration(p.DelayMs) * time.Millisecond
	if p.DelayMs < 0 || delay > maxDelay {
		return nil, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "delayMs out of range",
			map[string]int64{"min": 0, "max": maxDelay.Milliseconds()})
	}
	text, err := s.text(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	ctx = s.startProgress(ctx)
	const steps = 4
	s.progress(ctx, WorkDoneProgress{Kind: "begin", Title: "Counting words", Cancellable: true, Percentage: percent(0)})
	t := time.NewTimer(delay / steps)
	defer t.Stop()
	for i := 1; i <= steps; i++ {
		select {
		case <-t.C:
		case <-ctx.Done():
			s.progress(context.WithoutCancel(ctx), WorkDoneProgress{Kind: "end", Message: "cancelled"})
			return nil, ctx.Err()
		}
		if i < steps {
			s.progress(ctx, WorkDoneProgress{Kind: "report", Percentage: percent(100 * i / steps)})
			t.Reset(delay / steps)
		}
	}
	n := countWords(text)
	s.progress(ctx, WorkDoneProgress{Kind: "end", Message: fmt.Sprintf("%d words", n)})
	return &SlowCountResult{Words: n}, nil
}

func percent(n int) *int { return &n }

// startProgress returns a ctx to report work-done progress with: the
// request's own token, or one created with the client, if it accepts
// that; without either, reports are no-ops.
func (s *server) startProgress(ctx context.Context) context.Context {
	s.mu.Lock()
	create := s.clientProgress
	s.mu.Unlock()
	if !create {
		return ctx // ReportProgress uses the request's token, if any
	}
	pctx, err := jsonrpc.StartProgress(ctx)
	if err != nil {
		s.log.Info("no progress: the client refused a token", "err", err)
	}
	return pctx
}

// progress reports v, logging what fails: progress is a courtesy, and a
// request does not fail for want of it.
func (s *server) progress(ctx context.Context, v WorkDoneProgress) {
	if err := jsonrpc.ReportProgress(ctx, v); err != nil {
		s.log.Info("progress not sent", "err", err)
	}
}

// symbolsPerPart is how many symbols go in one partial result.
const symbolsPerPart = 10

// documentSymbol lists the words of a document as symbols. With a
// partialResultToken it streams them in parts of symbolsPerPart, each a
// $/progress written before the reply, and returns an empty final result
// as LSP asks; without one, it returns them all.
func (s *server) documentSymbol(ctx context.Context, p DocumentSymbolParams) ([]SymbolInformation, error) {
	text, err := s.text(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	all := []SymbolInformation{}
	for w := range words(text) {
		all = append(all, SymbolInformation{Name: w.Text, Kind: symbolVariable,
			Location: Location{URI: p.TextDocument.URI, Range: w.Range}})
	}
	if p.PartialResultToken == nil {
		return all, nil
	}
	for part := range slices.Chunk(all, symbolsPerPart) {
		if err := jsonrpc.ReportPartialResult(ctx, part); err != nil {
			return nil, err
		}
	}
	return []SymbolInformation{}, nil
}
