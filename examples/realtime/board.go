package main

import (
	"context"
	"fmt"
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
	CodeBadText      = -32010 // note text empty or too long
	CodeNoSuchID     = -32011 // like of a note that is not on the board
	CodeNotConfirmed = -32012 // board.clear that the page did not confirm
	CodeNotSignedIn  = -32013 // a connection without a user (not through requireSession)
)

const (
	maxText  = 140 // characters (runes) in a note
	maxName  = 24  // characters kept of a user's name
	maxNotes = 200 // notes kept on the board; older ones scroll off

	// confirmTimeout bounds how long board.clear waits for the person at
	// the page to answer page.confirm.
	confirmTimeout = time.Minute
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
// jsonrpc.Group, and calls back into a page (page.confirm) before it clears
// the board. Its handlers take the user from their ctx (userFrom): they
// serve connections that requireSession let through.
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
//	board.post  {text} → Note      signed by the session's user; error -32010 unless 1..140 characters
//	board.like  {id}   → Note      error -32011 for an unknown id
//	board.clear → {cleared: n}     error -32012 unless the page confirms
//
// the method the server calls on the page that asked to clear:
//
//	page.confirm {question, notes} → bool
//
// and the notifications pushed to pages: board.posted Note, board.liked
// Note, board.cleared {by}, board.stats Stats.
func (b *Board) Mux() *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	jsonrpc.Register(m, "board.list", b.list)
	jsonrpc.Register(m, "board.stats", func(context.Context, struct{}) (Stats, error) { return b.Stats(), nil })
	jsonrpc.Register(m, "board.post", b.post)
	jsonrpc.Register(m, "board.like", b.like)
	jsonrpc.Register(m, "board.clear", b.clear)
	return m
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

// errNotSignedIn answers a call on a connection that carries no user.
var errNotSignedIn = jsonrpc.NewError(CodeNotSignedIn, "not signed in", nil)

// post puts a note on the board, signed by the user the connection was
// authenticated as: its handlers' ctx carries it from the upgrade request.
// Nothing the page sends decides the author.
func (b *Board) post(ctx context.Context, p struct {
	Text string `json:"text"`
}) (Note, error) {
	author, ok := userFrom(ctx)
	if !ok {
		return Note{}, errNotSignedIn
	}
	text := strings.TrimSpace(p.Text)
	if n := utf8.RuneCountInString(text); n < 1 || n > maxText {
		return Note{}, jsonrpc.NewError(CodeBadText, "note text must be 1..140 characters", map[string]int{"length": n})
	}

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

// clear takes every note off the board, once the page that asked has
// confirmed, and tells the other pages who did.
func (b *Board) clear(ctx context.Context, _ struct{}) (map[string]int, error) {
	by, ok := userFrom(ctx)
	if !ok {
		return nil, errNotSignedIn
	}
	b.mu.Lock()
	asked := len(b.notes)
	b.mu.Unlock()
	if err := b.confirm(ctx, asked); err != nil {
		return nil, err
	}
	b.mu.Lock()
	n := len(b.notes)
	b.notes = nil
	b.mu.Unlock()

	b.pages.Notify("board.cleared", map[string]string{"by": by}, jsonrpc.PeerFromContext(ctx))
	b.statsChanged()
	return map[string]int{"cleared": n}, nil
}

// confirm calls page.confirm on the page whose request ctx belongs to (the
// server calling a method of its client on the same connection), with the
// number of notes on the board, which only the server knows for sure. Any
// answer but true, or none within confirmTimeout, is a refusal.
func (b *Board) confirm(ctx context.Context, notes int) error {
	peer := jsonrpc.PeerFromContext(ctx)
	ctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	defer cancel()
	start := time.Now()
	var yes bool
	err := peer.Call(ctx, "page.confirm", map[string]any{
		"question": fmt.Sprintf("Clear all %d notes from the board, for everyone?", notes),
		"notes":    notes,
	}, &yes)
	b.log.Info("server→page call", "method", "page.confirm", "elapsed", time.Since(start), "answer", yes, "err", err)
	if err != nil || !yes {
		return jsonrpc.NewError(CodeNotConfirmed, "the page did not confirm", nil)
	}
	return nil
}

// cleanName trims a user's name to something printable and short; it
// returns "" for a name with nothing printable.
func cleanName(name string) string {
	name = strings.Join(strings.Fields(name), " ")
	if r := []rune(name); len(r) > maxName {
		name = string(r[:maxName])
	}
	return name
}
