package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The board's state lives in JetStream, not in any node's memory, so that
// every node shows the same board and a node started late replays it.
//
// Bucket "board" (KV, one value per key, file storage):
//
//	posted     the number of notes ever posted, "17": also the last note
//	           id. A post takes the next id by compare-and-set (Create,
//	           then Update at the revision read), so ids are unique
//	           cluster-wide and Posted counts every node's posts.
//	note.<id>  a Note as JSON; a like is a compare-and-set Update of it.
//	cleared    {"upto": id, "by": name}: the notes with ids up to upto are
//	           off the board. One write clears the board atomically, for
//	           every node; the note keys it covers are then purged, as
//	           housekeeping.
//
// Bucket "board_online" (KV, TTL onlineTTL, with limit markers):
//
//	<node>     how many pages that node serves, "2". Each node writes its
//	           count when it changes and every onlineRefresh; a node that
//	           dies without deleting its key drops out of Stats.Online when
//	           the key ages out, and every node sees that (the server
//	           writes a marker that watchers receive). A TTL, not a count
//	           in the board bucket, because a crashed node cannot take its
//	           pages back.
//
// Each node watches both buckets from the start, so its view (board.list,
// board.stats) is the buckets' current state. Stats.Version is the sum of
// the last revisions the node has applied from the two buckets: it grows
// with every change, and two nodes that have applied the same changes give
// the same version.
const (
	boardBucket   = "board"
	onlineBucket  = "board_online"
	onlineTTL     = 15 * time.Second
	onlineRefresh = 5 * time.Second

	keyPosted  = "posted"
	keyCleared = "cleared"
	notePrefix = "note."
)

// cleared is the value of the cleared key.
type cleared struct {
	UpTo int64  `json:"upto"`
	By   string `json:"by"`
}

// view is one node's copy of the buckets, kept current by their watches.
type view struct {
	mu         sync.Mutex
	notes      map[int64]Note // every note key seen, cleared ones included until purged
	posted     int64
	cleared    cleared
	online     map[string]int // pages per node
	boardRev   uint64
	onlineRev  uint64
	changed    chan struct{} // closed and replaced on every change
	boardReady bool
}

func newView() *view {
	return &view{notes: make(map[int64]Note), online: make(map[string]int), changed: make(chan struct{})}
}

// notesLocked returns the notes on the board, oldest first: not cleared,
// and the last maxNotes.
func (v *view) notesLocked() []Note {
	notes := make([]Note, 0, len(v.notes))
	for id, n := range v.notes {
		if id > v.cleared.UpTo {
			notes = append(notes, n)
		}
	}
	slices.SortFunc(notes, func(a, b Note) int { return cmp.Compare(a.ID, b.ID) })
	if len(notes) > maxNotes {
		notes = notes[len(notes)-maxNotes:]
	}
	return notes
}

func (v *view) statsLocked() Stats {
	online := 0
	for _, n := range v.online {
		online += n
	}
	return Stats{
		Notes:   len(v.notesLocked()),
		Posted:  v.posted,
		Online:  online,
		Version: int64(v.boardRev + v.onlineRev),
	}
}

// note returns the note with id, if it is on the board.
func (v *view) note(id int64) (Note, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n, ok := v.notes[id]
	return n, ok && id > v.cleared.UpTo
}

// signalLocked wakes everyone waiting for a change.
func (v *view) signalLocked() {
	close(v.changed)
	v.changed = make(chan struct{})
}

// applyBoard applies one entry of the board bucket's watch.
func (v *view) applyBoard(e jetstream.KeyValueEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	put := e.Operation() == jetstream.KeyValuePut
	switch key := e.Key(); {
	case key == keyPosted:
		if put {
			v.posted, _ = strconv.ParseInt(string(e.Value()), 10, 64)
		}
	case key == keyCleared:
		v.cleared = cleared{}
		if put {
			json.Unmarshal(e.Value(), &v.cleared)
		}
	case strings.HasPrefix(key, notePrefix):
		id, err := strconv.ParseInt(strings.TrimPrefix(key, notePrefix), 10, 64)
		if err != nil {
			break
		}
		var n Note
		if put && json.Unmarshal(e.Value(), &n) == nil {
			v.notes[id] = n
		} else {
			delete(v.notes, id)
		}
	}
	v.boardRev = max(v.boardRev, e.Revision())
	v.signalLocked()
}

// applyOnline applies one entry of the online bucket's watch.
func (v *view) applyOnline(e jetstream.KeyValueEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e.Operation() == jetstream.KeyValuePut {
		v.online[e.Key()], _ = strconv.Atoi(string(e.Value()))
	} else {
		delete(v.online, e.Key())
	}
	v.onlineRev = max(v.onlineRev, e.Revision())
	v.signalLocked()
}

// wait returns once the view has applied the board bucket up to boardRev
// and the online bucket up to onlineRev, or when ctx ends.
func (v *view) wait(ctx context.Context, boardRev, onlineRev uint64) error {
	for {
		v.mu.Lock()
		done := v.boardRev >= boardRev && v.onlineRev >= onlineRev
		ch := v.changed
		v.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the board's watch: %w", context.Cause(ctx))
		}
	}
}

// store is the board's state in JetStream and this node's view of it.
type store struct {
	log    *slog.Logger
	board  jetstream.KeyValue
	online jetstream.KeyValue
	view   *view
}

// newStore returns a store whose view is empty until start.
func newStore(log *slog.Logger) *store { return &store{log: log, view: newView()} }

// start creates the buckets if they do not exist yet (every node asks, with
// the same configuration), starts watching them until ctx ends, and returns
// once the view holds their current state. onOnline sees every entry of the
// online bucket after the view has applied it. start retries until ctx
// ends, so that a node may start before its NATS server is reachable.
func (s *store) start(ctx context.Context, nc *nats.Conn, onOnline func(jetstream.KeyValueEntry)) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if !nc.IsConnected() {
		s.log.Info("waiting for NATS", "status", nc.Status().String())
	}
	for attempt := 0; ; attempt++ {
		err = s.open(ctx, js)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("open the board's buckets: %w", err)
		}
		if attempt%10 == 0 {
			s.log.Info("waiting for NATS JetStream", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err := s.watch(ctx, s.board, s.view.applyBoard); err != nil {
		return err
	}
	return s.watch(ctx, s.online, func(e jetstream.KeyValueEntry) {
		s.view.applyOnline(e)
		onOnline(e)
	})
}

func (s *store) open(ctx context.Context, js jetstream.JetStream) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var err error
	s.board, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      boardBucket,
		Description: "examples/realtime: the sticky board",
		Storage:     jetstream.FileStorage,
	})
	if err != nil {
		return err
	}
	s.online, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         onlineBucket,
		Description:    "examples/realtime: pages online per node",
		Storage:        jetstream.MemoryStorage,
		TTL:            onlineTTL,
		LimitMarkerTTL: time.Second,
	})
	return err
}

// watch applies kv's current state and then every change to it, with
// apply, until ctx ends; it returns once the current state is applied.
func (s *store) watch(ctx context.Context, kv jetstream.KeyValue, apply func(jetstream.KeyValueEntry)) error {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch bucket %s: %w", kv.Bucket(), err)
	}
	ready := make(chan struct{})
	go func() {
		defer w.Stop()
		for e := range w.Updates() {
			if e == nil { // the current state has been replayed
				close(ready)
				continue
			}
			apply(e)
		}
	}()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("replay bucket %s: %w", kv.Bucket(), context.Cause(ctx))
	}
}

// nextID takes the next note id, cluster-wide, by compare-and-set on the
// posted counter.
func (s *store) nextID(ctx context.Context) (int64, error) {
	for {
		e, err := s.board.Get(ctx, keyPosted)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if _, err := s.board.Create(ctx, keyPosted, []byte("1")); err == nil {
				return 1, nil
			} else if !errors.Is(err, jetstream.ErrKeyExists) {
				return 0, err
			}
			continue // another node posted the first note first
		}
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(string(e.Value()), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad posted counter %q: %w", e.Value(), err)
		}
		_, err = s.board.Update(ctx, keyPosted, []byte(strconv.FormatInt(n+1, 10)), e.Revision())
		if err == nil {
			return n + 1, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return 0, err
		}
		// Another post took n+1 meanwhile: read again.
	}
}

// putNote writes a new note and returns once this node's view has it.
func (s *store) putNote(ctx context.Context, n Note) error {
	data, _ := json.Marshal(n)
	rev, err := s.board.Put(ctx, noteKey(n.ID), data)
	if err != nil {
		return err
	}
	return s.view.wait(ctx, rev, 0)
}

// like adds one like to note id by compare-and-set, and returns the note
// once this node's view has it; false when the note is not on the board.
func (s *store) like(ctx context.Context, id int64) (Note, bool, error) {
	for {
		if _, ok := s.view.note(id); !ok {
			return Note{}, false, nil
		}
		e, err := s.board.Get(ctx, noteKey(id))
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return Note{}, false, nil
		}
		if err != nil {
			return Note{}, false, err
		}
		var n Note
		if err := json.Unmarshal(e.Value(), &n); err != nil {
			return Note{}, false, err
		}
		n.Likes++
		data, _ := json.Marshal(n)
		rev, err := s.board.Update(ctx, noteKey(id), data, e.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue // liked or purged meanwhile: read again
		}
		if err != nil {
			return Note{}, false, err
		}
		return n, true, s.view.wait(ctx, rev, 0)
	}
}

// clear takes every note posted so far off the board, cluster-wide, with
// one write of the cleared key, and returns how many notes this node showed
// of those. The note keys are then purged (housekeeping: the board no
// longer shows them either way).
func (s *store) clear(ctx context.Context, by string) (int, error) {
	var upTo int64
	e, err := s.board.Get(ctx, keyPosted)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return 0, err
	default:
		upTo, _ = strconv.ParseInt(string(e.Value()), 10, 64)
		// The notes posted up to upTo may still be on their way here.
		if err := s.view.wait(ctx, e.Revision(), 0); err != nil {
			return 0, err
		}
	}
	s.view.mu.Lock()
	n := 0
	var ids []int64
	for _, note := range s.view.notesLocked() {
		if note.ID <= upTo {
			n++
		}
	}
	for id := range s.view.notes {
		if id <= upTo {
			ids = append(ids, id)
		}
	}
	s.view.mu.Unlock()

	data, _ := json.Marshal(cleared{UpTo: upTo, By: by})
	rev, err := s.board.Put(ctx, keyCleared, data)
	if err != nil {
		return 0, err
	}
	if err := s.view.wait(ctx, rev, 0); err != nil {
		return 0, err
	}
	s.purge(ctx, ids)
	return n, nil
}

// purge removes note keys that are off the board, best effort.
func (s *store) purge(ctx context.Context, ids []int64) {
	for _, id := range ids {
		if err := s.board.Purge(ctx, noteKey(id)); err != nil {
			s.log.Info("purge of a note off the board failed", "id", id, "err", err)
			return
		}
	}
}

// scrollOff purges the keys of the notes that no longer fit on the board.
func (s *store) scrollOff(ctx context.Context) {
	s.view.mu.Lock()
	shown := s.view.notesLocked()
	var ids []int64
	if len(shown) == maxNotes {
		for id := range s.view.notes {
			if id > s.view.cleared.UpTo && id < shown[0].ID {
				ids = append(ids, id)
			}
		}
	}
	s.view.mu.Unlock()
	s.purge(ctx, ids)
}

// setOnline writes this node's page count and returns once the view has it.
func (s *store) setOnline(ctx context.Context, node string, pages int) error {
	rev, err := s.online.Put(ctx, node, []byte(strconv.Itoa(pages)))
	if err != nil {
		return err
	}
	return s.view.wait(ctx, 0, rev)
}

// dropOnline deletes this node's page count, as it leaves.
func (s *store) dropOnline(ctx context.Context, node string) error {
	return s.online.Delete(ctx, node)
}

func noteKey(id int64) string { return notePrefix + strconv.FormatInt(id, 10) }

// kvKey turns s into a valid KV key (letters, digits, - _ = and dots).
func kvKey(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '=':
			return r
		}
		return '_'
	}, s)
}
