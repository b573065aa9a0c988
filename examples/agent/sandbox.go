package main

import (
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/peerwire/jsonrpc"
)

// Application error codes the host and the tools answer with, besides
// CodeUnauthorized, in the range the specification leaves to
// implementation-defined server errors.
const (
	// CodeNotShared answers a request for a path outside the sandbox.
	CodeNotShared = -32011
	// CodeDeclined answers a files.delete the host did not confirm.
	CodeDeclined = -32012
)

// sandbox is the host's in-memory file system: the only files a tool can
// reach, through host.readFile and host.deleteFile. It is safe for
// concurrent use, as the handlers serving the tools' callbacks run
// concurrently.
type sandbox struct {
	mu    sync.Mutex
	files map[string]string // by clean absolute path
}

// newSandbox returns the files the user shared with the agent.
func newSandbox() *sandbox {
	return &sandbox{files: map[string]string{
		"/home/user/notes.txt": "buy milk\ncall the plumber about the sink\nfinish the quarterly report\n",
		"/home/user/todo.md":   "# TODO\n- ship the agent\n- write the tests\n",
		"/etc/hosts":           "127.0.0.1 localhost\n::1 localhost\n",
	}}
}

// clean returns p cleaned, and whether it is absolute.
func clean(p string) (string, bool) {
	return path.Clean(p), path.IsAbs(p)
}

// notShared is the error for a path outside the sandbox.
func notShared(p string) *jsonrpc.Error {
	return jsonrpc.NewError(CodeNotShared, "path is outside the sandbox", map[string]string{"path": p})
}

// read returns the contents of the file at p, or a CodeNotShared error.
func (s *sandbox) read(p string) (string, error) {
	c, abs := clean(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	content, ok := s.files[c]
	if !abs || !ok {
		return "", notShared(p)
	}
	return content, nil
}

// remove deletes the file at p, or returns a CodeNotShared error.
func (s *sandbox) remove(p string) error {
	c, abs := clean(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[c]; !abs || !ok {
		return notShared(p)
	}
	delete(s.files, c)
	return nil
}

// list returns the paths in the sandbox, sorted.
func (s *sandbox) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.files))
}

// confirm is the host's policy for host.confirm, standing in for asking the
// user: it allows deleting p unless p is under /etc (or is not an absolute
// path), and says why.
func confirm(p string) (yes bool, why string) {
	c, abs := clean(p)
	switch {
	case !abs:
		return false, "not an absolute path"
	case c == "/etc" || strings.HasPrefix(c, "/etc/"):
		return false, "nothing under /etc may be deleted"
	}
	return true, "outside /etc"
}
