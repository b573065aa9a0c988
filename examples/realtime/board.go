package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/peerwire/jsonrpc"
)

// Application error codes. The JSON-RPC specification leaves codes outside
// -32768..-32000 to applications.
const (
	CodeBadText  = -32010 // note text empty or too long
	CodeNoSuchID = -32011 // like of a note that is not on the board
)

const (
	maxText  = 140 // characters (runes) in a note
	maxName  = 24  // characters kept of a page's display name
	maxNotes = 200 // notes kept on the board; older ones scroll off
	anon     = "anonymous"
)

// Note is one sticky note on the board.
type Note struct {
	ID     int64     `json:"id"`
	Text   string    `json:"text"`
	Author string    `json:"author"`
	Likes  int       `json:"likes"`
	Time   time.Time `json:"time"`
}

// Stats is the board's summary, the result of board.stats and the params
// of the board.stats notification pushed whenever it changes.
//
// A reply and a notification travel separately, so a page may get an
// older summary after a newer one (a board.stats reply computed just before
// a change, written just after its push): Version orders them, and a page
// keeps the summary with the highest.
type Stats struct {
	Notes   int   `json:"notes"`   // notes on the board now
	Posted  int64 `json:"posted"`  // notes posted since the server started
	Online  int   `json:"online"`  // pages connected
	Version int64 `json:"version"` // grows with every change
}

// Board is the shared state every page sees. Its methods are the JSON-RPC
// methods pages call; it pushes changes to every connected page through a
// jsonrpc.Group, and calls back into the page (page.name) to learn who
// posted.
type Board struct {
	log   *slog.Logger
	pages jsonrpc.Group // every connected page

	mu      sync.Mutex
	notes   []Note
	nextID  int64
	posted  int64
	version int64 // of Stats
}

// NewBoard returns an empty board that logs to log.
func NewBoard(log *slog.Logger) *Board { return &Board{log: log} }

// Mux returns the methods pages may call:
//
//	board.list  → [Note]           all notes, oldest first
//	board.stats → Stats
//	board.post  {text} → Note      error -32010 unless 1..140 characters
//	board.like  {id}   → Note      error -32011 for an unknown id
//	board.clear → {cleared: n}
//
// and the notifications pushed to pages: board.posted Note, board.liked
// Note, board.cleared {by}, board.stats Stats.
func (b *Board) Mux() *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	must(jsonrpc.Register(m, "board.list", b.list))
	must(jsonrpc.Register(m, "board.stats", func(context.Context, struct{}) (Stats, error) { return b.Stats(), nil }))
	must(jsonrpc.Register(m, "board.post", b.post))
	must(jsonrpc.Register(m, "board.like", b.like))
	must(jsonrpc.Register(m, "board.clear", b.clear))
	return m
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Join adds a newly connected page to the board's audience.
func (b *Board) Join(p *jsonrpc.Peer) {
	b.pages.Add(p)
	b.statsChanged()
}

// Left tells the board that a page went away (it has already left the
// Group by itself), so that the others see the new online count.
func (b *Board) Left() { b.statsChanged() }

// Stats returns the board's summary.
func (b *Board) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.statsLocked()
}

func (b *Board) statsLocked() Stats {
	return Stats{Notes: len(b.notes), Posted: b.posted, Online: b.pages.Len(), Version: b.version}
}

// statsChanged pushes the new summary to every page. Group.Notify only
// queues, so it may run under the lock, which keeps pushes in version order.
func (b *Board) statsChanged() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.version++
	b.pages.Notify("board.stats", b.statsLocked())
}

func (b *Board) list(context.Context, struct{}) ([]Note, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Note{}, b.notes...), nil
}

// post puts a note on the board. The author is whatever the posting page
// answers when the server calls its page.name method.
func (b *Board) post(ctx context.Context, p struct {
	Text string `json:"text"`
}) (Note, error) {
	text := strings.TrimSpace(p.Text)
	if n := utf8.RuneCountInString(text); n < 1 || n > maxText {
		return Note{}, jsonrpc.NewError(CodeBadText, "note text must be 1..140 characters", map[string]int{"length": n})
	}
	author := b.askName(ctx)

	b.mu.Lock()
	b.nextID++
	b.posted++
	note := Note{ID: b.nextID, Text: text, Author: author, Time: time.Now().UTC().Truncate(time.Second)}
	b.notes = append(b.notes, note)
	if len(b.notes) > maxNotes {
		b.notes = append([]Note{}, b.notes[len(b.notes)-maxNotes:]...)
	}
	b.mu.Unlock()

	// The poster renders the note from this call's result; the others
	// hear about it.
	b.pages.Notify("board.posted", note, jsonrpc.PeerFromContext(ctx))
	b.statsChanged()
	return note, nil
}

// like adds one like to a note.
func (b *Board) like(ctx context.Context, p struct {
	ID int64 `json:"id"`
}) (Note, error) {
	b.mu.Lock()
	var note *Note
	for i := range b.notes {
		if b.notes[i].ID == p.ID {
			note = &b.notes[i]
			break
		}
	}
	if note == nil {
		b.mu.Unlock()
		return Note{}, jsonrpc.NewError(CodeNoSuchID, "no such note", map[string]int64{"id": p.ID})
	}
	note.Likes++
	liked := *note
	b.mu.Unlock()

	b.pages.Notify("board.liked", liked, jsonrpc.PeerFromContext(ctx))
	return liked, nil
}

// clear takes every note off the board and tells the other pages who did.
func (b *Board) clear(ctx context.Context, _ struct{}) (map[string]int, error) {
	by := b.askName(ctx)
	b.mu.Lock()
	n := len(b.notes)
	b.notes = nil
	b.mu.Unlock()

	b.pages.Notify("board.cleared", map[string]string{"by": by}, jsonrpc.PeerFromContext(ctx))
	b.statsChanged()
	return map[string]int{"cleared": n}, nil
}

// askName calls page.name on the page whose request ctx belongs to: the
// server calling a method of its client on the same connection. A page
// that does not answer in time, or answers with an error, is anonymous.
func (b *Board) askName(ctx context.Context) string {
	peer := jsonrpc.PeerFromContext(ctx)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	var name string
	err := peer.Call(ctx, "page.name", nil, &name)
	b.log.Info("server→page call", "method", "page.name", "elapsed", time.Since(start), "answer", name, "err", err)
	if err != nil {
		return anon
	}
	return cleanName(name)
}

// cleanName trims a display name to something printable and short.
func cleanName(name string) string {
	name = strings.Join(strings.Fields(name), " ")
	if r := []rune(name); len(r) > maxName {
		name = string(r[:maxName])
	}
	if name == "" {
		return anon
	}
	return name
}
