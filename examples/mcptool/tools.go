package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/schema"
)

const (
	// maxFileSize bounds what read_file and summarize_file read.
	maxFileSize = 1 << 20
	// maxListed bounds the files list_files names.
	maxListed = 1000
	// maxWait bounds the seconds wait may be asked to wait.
	maxWait = 600
)

// A tool is one entry of tools/list and what tools/call runs for it.
type tool struct {
	def toolDef
	// run returns the tool's text, or an error: an *argsError for
	// arguments that do not fit the schema (a protocol error), anything
	// else for the tool's own failure (a result with isError).
	run func(ctx context.Context, s *server, call *callToolParams) (string, error)
}

// argsError is a tools/call whose arguments do not fit the tool.
type argsError struct{ err error }

func (e *argsError) Error() string { return "invalid arguments: " + e.err.Error() }

var tools = []tool{
	{toolDef{
		Name: "list_files", Title: "List files",
		Description: "List the files under a directory of the root (the whole root by default), with their sizes.",
		InputSchema: inputSchema[listArgs](),
	}, listFiles},
	{toolDef{
		Name: "read_file", Title: "Read a file",
		Description: "Return the text of a file under the root (at most 1 MiB). Paths outside the root are refused.",
		InputSchema: inputSchema[pathArgs](),
	}, readFile},
	{toolDef{
		Name: "summarize_file", Title: "Summarize a file",
		Description: "Read a file under the root and ask the client's model for a summary (sampling/createMessage), reporting progress.",
		InputSchema: inputSchema[summarizeArgs](),
	}, summarizeFile},
	{toolDef{
		Name: "wait", Title: "Wait",
		Description: "Wait the given seconds, reporting progress each second; stops at once when the call is cancelled.",
		InputSchema: inputSchema[waitArgs](),
	}, wait},
}

// toolDefs returns the tools as tools/list lists them.
func toolDefs() []toolDef {
	defs := make([]toolDef, len(tools))
	for i, t := range tools {
		defs[i] = t.def
	}
	return defs
}

// callTool runs the tool a tools/call names.
func (s *server) callTool(ctx context.Context, p callToolParams) (callToolResult, error) {
	for _, t := range tools {
		if t.def.Name != p.Name {
			continue
		}
		text, err := t.run(ctx, s, &p)
		var ae *argsError
		switch {
		case errors.As(err, &ae):
			return callToolResult{}, jsonrpc.NewError(jsonrpc.CodeInvalidParams, ae.Error(), map[string]string{"tool": p.Name})
		case ctx.Err() != nil:
			return callToolResult{}, ctx.Err() // cancelled: the client has stopped waiting
		case err != nil:
			return callToolResult{Content: []content{{"text", err.Error()}}, IsError: true}, nil
		}
		return callToolResult{Content: []content{{"text", text}}}, nil
	}
	return callToolResult{}, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "unknown tool: "+p.Name, nil)
}

// args decodes a call's arguments into dst.
func args(call *callToolParams, dst any) error {
	if len(call.Arguments) == 0 {
		return nil
	}
	if err := json.Unmarshal(call.Arguments, dst); err != nil {
		return &argsError{err}
	}
	return nil
}

// The tools' arguments: their inputSchema is made from these types
// (inputSchema), so that what tools/list promises is what args decodes.

// listArgs are list_files' arguments.
type listArgs struct {
	Path string `json:"path,omitempty" doc:"a directory relative to the root; default the root itself"`
}

// pathArgs are read_file's arguments.
type pathArgs struct {
	Path string `json:"path" doc:"a file relative to the root"`
}

// summarizeArgs are summarize_file's arguments.
type summarizeArgs struct {
	Path      string `json:"path" doc:"a file relative to the root"`
	MaxTokens count  `json:"maxTokens,omitempty" doc:"the most tokens the summary may take; default 200"`
}

// waitArgs are wait's arguments.
type waitArgs struct {
	Seconds seconds `json:"seconds"`
}

// seconds is a time to wait, from 0 to maxWait: its schema says the bounds
// that wait checks.
type seconds float64

// JSONSchema says the bounds of seconds.
func (seconds) JSONSchema() schema.Schema {
	return schema.Schema{"type": "number", "minimum": 0, "maximum": maxWait}
}

// inputSchema is the schema of T, a tool's arguments, as an object (what
// MCP's inputSchema must be). T's types are the program's own: a type
// without a JSON form is a bug, and panics at start.
func inputSchema[T any]() json.RawMessage {
	var g schema.Generator
	s, err := g.Body(reflect.TypeFor[T]())
	if err != nil {
		panic(err)
	}
	if defs := g.Defs(); len(defs) > 0 {
		s["$defs"] = defs
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// openRoot opens the tools' root. An os.Root refuses every path that
// leaves it, by "..", an absolute path or a symbolic link; when the server
// is confined, the root is opened within -root's, so that a symbolic link
// on the way to it cannot leave -root either.
func openRoot(ctx context.Context, s *server) (*os.Root, error) {
	dir, err := s.root(ctx)
	if err != nil {
		return nil, err
	}
	if !s.confined {
		return os.OpenRoot(dir)
	}
	bound, err := os.OpenRoot(s.fallbackRoot)
	if err != nil {
		return nil, err
	}
	defer bound.Close()
	rel, err := filepath.Rel(filepath.Clean(s.fallbackRoot), filepath.Clean(dir))
	if err != nil {
		return nil, err
	}
	return bound.OpenRoot(rel)
}

func listFiles(ctx context.Context, s *server, call *callToolParams) (string, error) {
	var a listArgs
	if err := args(call, &a); err != nil {
		return "", err
	}
	if a.Path == "" {
		a.Path = "."
	}
	r, err := openRoot(ctx, s)
	if err != nil {
		return "", err
	}
	defer r.Close()
	var lines []string
	err = fs.WalkDir(r.FS(), a.Path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || len(lines) == maxListed {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// Not followed: read_file refuses one that leaves the root.
			lines = append(lines, p+" (symbolic link)")
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s (%d bytes)", p, info.Size()))
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(lines) == 0 {
		return "no files", nil
	}
	return strings.Join(lines, "\n"), nil
}

// readText reads a text file under the root.
func readText(ctx context.Context, s *server, p string) (string, error) {
	if p == "" {
		return "", &argsError{errors.New("path is required")}
	}
	r, err := openRoot(ctx, s)
	if err != nil {
		return "", err
	}
	defer r.Close()
	f, err := r.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxFileSize {
		return "", fmt.Errorf("%s is larger than %d bytes", p, maxFileSize)
	}
	return string(b), nil
}

func readFile(ctx context.Context, s *server, call *callToolParams) (string, error) {
	var a pathArgs
	if err := args(call, &a); err != nil {
		return "", err
	}
	return readText(ctx, s, a.Path)
}

// summarizeFile reads a file and has the client's model summarize it: the
// server calls sampling/createMessage on the client while the client's
// tools/call is still running, on the same pipe.
func summarizeFile(ctx context.Context, s *server, call *callToolParams) (string, error) {
	var a summarizeArgs
	if err := args(call, &a); err != nil {
		return "", err
	}
	if a.MaxTokens <= 0 {
		a.MaxTokens = 200
	}
	if s.clientCaps().Sampling == nil {
		return "", errors.New("the client did not declare the sampling capability: no model to summarize with")
	}
	// Progress goes out for the steps before the last; the result itself
	// says the last is done. A progress notification written just before
	// the result can reach a client's handler after it, once the call is
	// over: the TypeScript SDK then reports it as a protocol error
	// (modelcontextprotocol/typescript-sdk#2580).
	const steps = 3
	text, err := readText(ctx, s, a.Path)
	if err != nil {
		return "", err
	}
	progress(ctx, 1, steps, fmt.Sprintf("read %s: %d bytes", a.Path, len(text)))
	progress(ctx, 2, steps, "asking the client's model for a summary")
	req := createMessageParams{
		Messages: []samplingMessage{{Role: "user", Content: content{"text",
			fmt.Sprintf("Summarize the file %s in one sentence.\n\n%s", a.Path, text)}}},
		SystemPrompt:   "You summarize files for a developer, briefly.",
		IncludeContext: "none",
		MaxTokens:      int(a.MaxTokens),
	}
	var res createMessageResult
	if err := jsonrpc.PeerFromContext(ctx).Call(ctx, "sampling/createMessage", req, &res); err != nil {
		return "", fmt.Errorf("sampling/createMessage: %w", err)
	}
	s.log.Info("summarize_file", "path", a.Path, "model", res.Model)
	return res.text(), nil
}

// wait waits, reporting progress once a second, until the time is up or
// the call is cancelled (notifications/cancelled cancels ctx), and says so
// on stderr and to the client.
func wait(ctx context.Context, s *server, call *callToolParams) (string, error) {
	var wa waitArgs
	if err := args(call, &wa); err != nil {
		return "", err
	}
	a := struct{ Seconds float64 }{float64(wa.Seconds)}
	if a.Seconds < 0 || a.Seconds > maxWait {
		return "", &argsError{fmt.Errorf("seconds must be between 0 and %d", maxWait)}
	}
	total := time.Duration(a.Seconds * float64(time.Second))
	start := time.Now()
	done := time.NewTimer(total)
	defer done.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-done.C:
			return fmt.Sprintf("waited %v", total), nil
		case <-tick.C:
			if float64(n) < a.Seconds { // not the last: the result says that (see summarizeFile)
				progress(ctx, float64(n), a.Seconds, fmt.Sprintf("%ds of %v", n, total))
			}
		case <-ctx.Done():
			msg := fmt.Sprintf("wait: cancelled after %v of %v; stopped", time.Since(start).Round(time.Millisecond), total)
			s.log.Info(msg)
			logToClient(ctx, msg)
			return "", ctx.Err()
		}
	}
}
