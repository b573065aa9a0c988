package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/stdio"
)

// The messages between the host and the tools. A tool's method also
// receives the "_meta" member its interceptor checked (see auth.go), which
// these types ignore.

// toolInfo describes one method of a tool, as tools/list returns it.
type toolInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// toolList is the result of tools/list.
type toolList struct {
	Tools []toolInfo `json:"tools"`
}

// pathParams are the params of files.read, files.delete, host.readFile and
// host.deleteFile.
type pathParams struct {
	Path string `json:"path"`
}

// fileContent is the result of host.readFile.
type fileContent struct {
	Content string `json:"content"`
}

// confirmParams are the params of host.confirm: a question for the user,
// and the path it is about for the host's policy. Its result is a bool.
type confirmParams struct {
	Question string `json:"question"`
	Path     string `json:"path"`
}

// readResult is the result of files.read.
type readResult struct {
	Path  string `json:"path"`
	Lines int    `json:"lines"`
	Words int    `json:"words"`
	Bytes int    `json:"bytes"`
}

// deleteResult is the result of files.delete.
type deleteResult struct {
	Path    string `json:"path"`
	Deleted bool   `json:"deleted"`
}

// echoParams are the params and result of flaky.echo.
type echoParams struct {
	Text string `json:"text"`
}

// crashParams are the params of flaky.crash: how long to wait before exiting.
type crashParams struct {
	AfterMS int `json:"after_ms"`
}

// crashStatus is the exit status of flaky.crash.
const crashStatus = 3

var (
	filesTools = []toolInfo{
		{"files.read", "count the lines, words and bytes of a file (asks the host for it)"},
		{"files.delete", "delete a file in the host's sandbox, once the host confirms"},
		{"files.peek", "try host.readFile without the token (the host refuses)"},
	}
	flakyTools = []toolInfo{
		{"flaky.echo", "send the text back"},
		{"flaky.crash", fmt.Sprintf("exit at once with status %d, without replying", crashStatus)},
	}
)

// runTool serves the named tool on stdin and stdout until the host closes
// stdin, refusing every call that lacks the token from the environment and
// adding it to the calls the tool makes back to the host.
func runTool(name string) error {
	mux := jsonrpc.NewMux()
	switch name {
	case "files":
		registerFiles(mux)
	case "flaky":
		registerFlaky(mux)
	default:
		return usageError(fmt.Sprintf("unknown tool %q (want files or flaky)", name))
	}
	token := os.Getenv(tokenEnv)
	if token == "" {
		return usageError(fmt.Sprintf("tool %s: no token in $%s: tools are started by the host", name, tokenEnv))
	}
	os.Unsetenv(tokenEnv) // nothing the tool might start needs it

	// Standard output carries the protocol: diagnostics go to stderr.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("tool", name)
	return jsonrpc.Serve(stdio.Stdio(stdio.Options{Framing: stdio.Line}), jsonrpc.Options{
		Handler:      mux,
		Logger:       logger,
		Cancel:       jsonrpc.MCPCancel,
		Interceptors: []jsonrpc.Interceptor{addToken(token), requireToken(token)},
	})
}

// registerFiles registers the methods of the files tool.
func registerFiles(mux *jsonrpc.Mux) {
	jsonrpc.Register(mux, "tools/list", func(context.Context, struct{}) (toolList, error) {
		return toolList{Tools: filesTools}, nil
	})
	jsonrpc.Register(mux, "files.read", filesRead)
	jsonrpc.Register(mux, "files.delete", filesDelete)
	jsonrpc.Register(mux, "files.peek", filesPeek)
}

// peekResult is the result of files.peek.
type peekResult struct {
	Refused bool   `json:"refused"`
	Code    int64  `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// filesPeek tries host.readFile without the token, as a tool gone rogue
// might, and reports what the host answered: the host refuses any call from
// a tool that lacks it.
func filesPeek(ctx context.Context, p pathParams) (peekResult, error) {
	if err := needPath(p); err != nil {
		return peekResult{}, err
	}
	err := jsonrpc.PeerFromContext(ctx).Call(context.WithValue(ctx, noTokenKey{}, true), "host.readFile", p, nil)
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return peekResult{Refused: true, Code: e.Code, Message: e.Message}, nil
	}
	return peekResult{}, err
}

// registerFlaky registers the methods of the flaky tool.
func registerFlaky(mux *jsonrpc.Mux) {
	jsonrpc.Register(mux, "tools/list", func(context.Context, struct{}) (toolList, error) {
		return toolList{Tools: flakyTools}, nil
	})
	jsonrpc.Register(mux, "flaky.echo", func(_ context.Context, p echoParams) (echoParams, error) {
		return p, nil
	})
	jsonrpc.Register(mux, "flaky.crash", flakyCrash)
}

// needPath checks that params name a path.
func needPath(p pathParams) error {
	if p.Path == "" {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "Invalid params", "path is required")
	}
	return nil
}

// filesRead gets the file from the host, over the same pipe the call came
// in on, and counts it. An error the host answers with goes back as is.
func filesRead(ctx context.Context, p pathParams) (readResult, error) {
	if err := needPath(p); err != nil {
		return readResult{}, err
	}
	host := jsonrpc.PeerFromContext(ctx)
	var f fileContent
	if err := host.Call(ctx, "host.readFile", pathParams{Path: p.Path}, &f); err != nil {
		return readResult{}, jsonrpc.Forward(err) // the host's refusal, as the host said it
	}
	lines := strings.Count(f.Content, "\n")
	if f.Content != "" && !strings.HasSuffix(f.Content, "\n") {
		lines++
	}
	return readResult{Path: p.Path, Lines: lines, Words: len(strings.Fields(f.Content)), Bytes: len(f.Content)}, nil
}

// filesDelete asks the host to confirm, and deletes the file in the host's
// sandbox only if it does.
func filesDelete(ctx context.Context, p pathParams) (deleteResult, error) {
	if err := needPath(p); err != nil {
		return deleteResult{}, err
	}
	host := jsonrpc.PeerFromContext(ctx)
	var yes bool
	q := confirmParams{Question: fmt.Sprintf("Delete %s?", p.Path), Path: p.Path}
	if err := host.Call(ctx, "host.confirm", q, &yes); err != nil {
		return deleteResult{}, jsonrpc.Forward(err)
	}
	if !yes {
		return deleteResult{}, jsonrpc.NewError(CodeDeclined, "the host declined the deletion", map[string]string{"path": p.Path})
	}
	if err := host.Call(ctx, "host.deleteFile", pathParams{Path: p.Path}, nil); err != nil {
		return deleteResult{}, jsonrpc.Forward(err)
	}
	return deleteResult{Path: p.Path, Deleted: true}, nil
}

// flakyCrash ends the process in the middle of the call: no reply is ever
// written.
func flakyCrash(ctx context.Context, p crashParams) (struct{}, error) {
	if p.AfterMS > 0 {
		select {
		case <-time.After(time.Duration(min(p.AfterMS, 10_000)) * time.Millisecond):
		case <-ctx.Done():
		}
	}
	os.Exit(crashStatus)
	return struct{}{}, nil
}
