// Command wordcount is the README's second guide: an LSP-style tool on
// standard input and output (LSP's Content-Length framing), an editor or
// any client starting it as a child process. Its one method,
// wordcount/lines, counts the words of each line of a text, reporting
// work-done progress and, when the client asks for them, partial results;
// shutdown and exit end it as LSP says.
//
// It is meant to be read: the README quotes it, and main_test.go runs it
// in-process and as a child process.
package main

import (
	"context"
	"os"
	"strings"
	"sync/atomic"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
)

func main() {
	os.Exit(stdio.Serve(stdio.Stdio(), options())) // Header framing by default
}

// options are the Peer's: LSP's cancellation ($/cancelRequest) and
// progress ($/progress with workDoneToken and partialResultToken).
func options() jsonrpc.Options {
	s := &server{}
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "initialize", s.initialize)
	jsonrpc.Register(mux, "wordcount/lines", s.lines)
	jsonrpc.Register(mux, "shutdown", s.shutdown)
	jsonrpc.RegisterNotification(mux, "exit", s.exit)
	return jsonrpc.Options{Handler: mux, Cancel: jsonrpc.LSPCancel, Progress: jsonrpc.LSPProgress}
}

type server struct{ shutDown atomic.Bool }

// LinesParams are wordcount/lines' params. The Peer adds the tokens
// (workDoneToken, partialResultToken) to the params of a client's Call;
// the handler needs no field for them.
type LinesParams struct {
	Text string `json:"text"`
}

// LineCount is one line's count.
type LineCount struct {
	Line  int `json:"line"`
	Words int `json:"words"`
}

func (s *server) initialize(ctx context.Context, _ any) (any, error) {
	return map[string]any{"capabilities": map[string]any{}, "serverInfo": map[string]string{"name": "wordcount"}}, nil
}

// lines counts each line's words. Progress goes to the caller's
// workDoneToken, if it gave one; with a partialResultToken, each line's
// count goes as a partial result and the final result is empty, as LSP
// asks.
func (s *server) lines(ctx context.Context, p LinesParams) ([]LineCount, error) {
	text := strings.Split(p.Text, "\n")
	jsonrpc.ReportProgress(ctx, map[string]any{"kind": "begin", "title": "counting"})
	var all []LineCount
	for i, line := range text {
		if err := ctx.Err(); err != nil {
			return nil, err // the client cancelled ($/cancelRequest)
		}
		c := LineCount{Line: i, Words: len(strings.Fields(line))}
		if jsonrpc.WantsPartialResults(ctx) {
			if err := jsonrpc.ReportPartialResult(ctx, []LineCount{c}); err != nil {
				return nil, err
			}
		} else {
			all = append(all, c)
		}
		jsonrpc.ReportProgress(ctx, map[string]any{"kind": "report", "percentage": 100 * (i + 1) / len(text)})
	}
	jsonrpc.ReportProgress(ctx, map[string]any{"kind": "end"})
	return all, nil // empty when the parts went as partial results
}

func (s *server) shutdown(ctx context.Context, _ any) (any, error) {
	s.shutDown.Store(true)
	return nil, nil
}

// exit ends the process: status 0 after shutdown, 1 without, as LSP says.
func (s *server) exit(ctx context.Context, _ any) error {
	code := 1
	if s.shutDown.Load() {
		code = 0
	}
	return stdio.Exit(ctx, code)
}
