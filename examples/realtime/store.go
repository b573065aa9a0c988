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
	"sync/atomic"
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
// Bucket "board_online" (KV, file storage, TTL onlineTTL, with limit
// markers):
//
//	<node>     how many pages that node serves, "2". Each node writes its
//	           count when it changes and every onlineRefresh, from a
//	           goroutine of its own (never on a page's path); a node that
//	           dies without deleting its key drops out of Stats.Online when
//	           the key ages out, and every node sees that (the server
//	           writes a marker that watchers receive). A TTL, not a count
//	           in the board bucket, because a crashed node cannot take its
//	           pages back. File storage, not memory: a memory bucket is
//	           gone when its server restarts (cluster/README.md, "When
//	           NATS goes away", says why this design and not heartbeats).
//
// Both buckets are made with the configured number of replicas (3 on a
// three-server NATS cluster), so that losing a server loses neither.
//
// Each node follows both buckets (store.run): it opens them (creating them
// if they are missing), replays each into a fresh copy that replaces its
// view at once when the replay is complete, and applies every change
// after that. It replays them again whenever NATS reconnects, a watch
// ends, or the watch is stale (a write of this node's not back within
// staleAfter; the stream's last sequence not reached by the next check),
// and opens (makes) them again first when a bucket's stream is gone or is
// not the one it replayed (made anew): nothing depends on a watch resuming
// at a sequence that a restart may have made meaningless, or on the server
// its consumer lives on, and a reconnection does not update the buckets'
// streams (which waits on JetStream's raft groups). Each JetStream request
// of a page's call is bounded and made again past a server that stopped
// answering (store_retry.go).
//
// Stats.Version is the sum of the last revisions the node has applied
// from the two buckets: it grows with every change, and two nodes that
// have applied the same changes give the same version.
const (
	boardBucket   = "board"
	onlineBucket  = "board_online"
	onlineTTL     = 15 * time.Second
	onlineRefresh = 5 * time.Second

	// storeTimeout bounds each JetStream request the store makes, and
	// checkEvery is how often it checks that the buckets it follows are
	// still the ones it replayed.
	storeTimeout = 2 * time.Second
	checkEvery   = 2 * time.Second

	// staleAfter is how long a write waits for the watch to bring it
	// before the watch counts as stale and the node replays the buckets:
	// a watch's consumer lives on one server, and when that server goes
	// nats.go would notice only after two missed 5 s heartbeats.
	staleAfter = time.Second

	// replayTimeout bounds a replay: one whose watch brings nothing (its
	// consumer on a server that stopped answering) starts again, given
	// twice as long each time until one completes.
	replayTimeout = 2 * time.Second

	keyPosted  = "posted"
	keyCleared = "cleared"
	notePrefix = "note."
)

// errNotLoaded is a store operation's error before the buckets are open.
var errNotLoaded = errors.New("the board's buckets are not open yet")

// errStaleWatch says a watch is behind its bucket: the bucket is the same,
// replaying it is enough.
var errStaleWatch = errors.New("the watch is stale")

// cleared is the value of the cleared key.
type cleared struct {
	UpTo int64  `json:"upto"`
	By   string `json:"by"`
}

// boardState is the board bucket's content as a replay or a watch has
// applied it.
type boardState struct {
	notes   map[int64]Note // every note key seen, cleared ones included until purged
	posted  int64
	cleared cleared
	rev     uint64
}

func newBoardState() *boardState { return &boardState{notes: make(map[int64]Note)} }

func (b *boardState) apply(e jetstream.KeyValueEntry) {
	put := e.Operation() == jetstream.KeyValuePut
	switch key := e.Key(); {
	case key == keyPosted:
		if put {
			b.posted, _ = strconv.ParseInt(string(e.Value()), 10, 64)
		}
	case key == keyCleared:
		b.cleared = cleared{}
		if put {
			json.Unmarshal(e.Value(), &b.cleared)
		}
	case strings.HasPrefix(key, notePrefix):
		id, err := strconv.ParseInt(strings.TrimPrefix(key, notePrefix), 10, 64)
		if err != nil {
			break
		}
		var n Note
		if put && json.Unmarshal(e.Value(), &n) == nil {
			b.notes[id] = n
		} else {
			delete(b.notes, id)
		}
	}
	b.rev = max(b.rev, e.Revision())
}

// onlineState is the online bucket's content: pages per node.
type onlineState struct {
	counts map[string]int
	rev    uint64
}

func newOnlineState() *onlineState { return &onlineState{counts: make(map[string]int)} }

func (o *onlineState) apply(e jetstream.KeyValueEntry) {
	if e.Operation() == jetstream.KeyValuePut {
		o.counts[e.Key()], _ = strconv.Atoi(string(e.Value()))
	} else {
		delete(o.counts, e.Key())
	}
	o.rev = max(o.rev, e.Revision())
}

// view is one node's copy of the buckets, kept current by their watches.
type view struct {
	mu      sync.Mutex
	board   *boardState
	online  *onlineState
	changed chan struct{} // closed and replaced on every change
}

func newView() *view {
	return &view{board: newBoardState(), online: newOnlineState(), changed: make(chan struct{})}
}

// notesLocked returns the notes on the board, oldest first: not cleared,
// and the last maxNotes.
func (v *view) notesLocked() []Note {
	notes := make([]Note, 0, len(v.board.notes))
	for id, n := range v.board.notes {
		if id > v.board.cleared.UpTo {
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
	for _, n := range v.online.counts {
		online += n
	}
	return Stats{
		Notes:   len(v.notesLocked()),
		Posted:  v.board.posted,
		Online:  online,
		Version: int64(v.board.rev + v.online.rev),
	}
}

// cleared reports whether the note with id is off the board, cleared.
func (v *view) cleared(id int64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return id <= v.board.cleared.UpTo
}

// signalLocked wakes everyone waiting for a change.
func (v *view) signalLocked() {
	close(v.changed)
	v.changed = make(chan struct{})
}

func (v *view) applyBoard(e jetstream.KeyValueEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.board.apply(e)
	v.signalLocked()
}

func (v *view) applyOnline(e jetstream.KeyValueEntry) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.online.apply(e)
	v.signalLocked()
}

// installBoard replaces the board's copy with a complete replay. Its
// revision never goes back unless the bucket is a new one (fresh).
func (v *view) installBoard(b *boardState, fresh bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !fresh {
		b.rev = max(b.rev, v.board.rev)
	}
	v.board = b
	v.signalLocked()
}

// installOnline is installBoard for the online bucket.
func (v *view) installOnline(o *onlineState, fresh bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !fresh {
		o.rev = max(o.rev, v.online.rev)
	}
	v.online = o
	v.signalLocked()
}

// wait returns once the view has applied the board bucket up to boardRev,
// or when ctx ends.
func (v *view) wait(ctx context.Context, boardRev uint64) error {
	for {
		v.mu.Lock()
		done := v.board.rev >= boardRev
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

// waitView is view.wait that reports the watch stale (to follow) once the
// view has not reached rev within staleAfter. If all, it goes on waiting
// until ctx ends; else it returns then, and at once while the buckets are
// being replayed: a write that JetStream has acknowledged is not failed,
// nor held, because this node's watch is behind (its consumer on a server
// that stopped answering, say); the replay brings it to the view.
func (s *store) waitView(ctx context.Context, rev uint64, all bool) error {
	if !all && s.replaying.Load() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, staleAfter)
	err := s.view.wait(wctx, rev)
	cancel()
	if err == nil || ctx.Err() != nil {
		return err
	}
	select {
	case s.stale <- struct{}{}:
	default:
	}
	if !all {
		s.log.Info("a write is not in this node's view yet: answered without it", "revision", rev)
		return nil
	}
	return s.view.wait(ctx, rev)
}

// store is the board's state in JetStream and this node's view of it.
type store struct {
	log       *slog.Logger
	replicas  int
	view      *view
	nc        *nats.Conn  // for suspect (store_retry.go)
	checking  atomic.Bool // suspect is checking the connection
	replaying atomic.Bool // follow is replaying the buckets

	// Set before run, called from the watches' goroutine: onOnline after
	// the view applied a change of the online bucket, onLoad after a
	// complete replay replaced the view (before loaded is closed, the
	// first time).
	onOnline func(jetstream.KeyValueEntry)
	onLoad   func()

	mu         sync.Mutex
	board      jetstream.KeyValue // nil until opened
	online     jetstream.KeyValue
	reopen     bool          // the buckets changed under the node: open (make) them again
	replayWait time.Duration // how long the next replay may take (follow)
	state      string        // for /healthz: "starting", "waiting for NATS", "store unavailable: …", "ready"
	loaded     chan struct{} // closed once the view has held both buckets
	created    [2]time.Time  // when the followed streams were made
	lastSeq    [2]uint64     // the streams' last sequences at the last check
	stale      chan struct{} // 1-buffered: a write waited staleAfter for the watch
}

// newStore returns a store whose view is empty until run has replayed the
// buckets, which it makes with replicas copies (0: 3 when the server is
// part of a NATS cluster, else 1), on nc.
func newStore(log *slog.Logger, replicas int, nc *nats.Conn) *store {
	return &store{log: log, replicas: replicas, nc: nc, view: newView(), state: "starting", loaded: make(chan struct{}), stale: make(chan struct{}, 1),
		onOnline: func(jetstream.KeyValueEntry) {}, onLoad: func() {}}
}

// status returns what /healthz says of the store, and whether the view
// has ever held both buckets.
func (s *store) status() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.loaded:
		return s.state, true
	default:
		return s.state, false
	}
}

// report records how a JetStream operation of the node went, so that
// /healthz says "store unavailable" from the first failure to the next
// success, once the board is loaded.
func (s *store) report(err error) {
	if errors.Is(err, errNotLoaded) || errors.Is(err, context.Canceled) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.loaded:
	default:
		return
	}
	if err != nil {
		s.state = "store unavailable: " + err.Error()
	} else {
		s.state = "ready"
	}
}

func (s *store) setState(state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = state
}

// kvs returns the buckets' handles, or errNotLoaded.
func (s *store) kvs() (board, online jetstream.KeyValue, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.board == nil {
		return nil, nil, errNotLoaded
	}
	return s.board, s.online, nil
}

// run follows the buckets until ctx ends: it opens them (retrying while
// NATS or JetStream is away), replays them into the view and applies their
// changes, and starts again whenever NATS reconnects, a watch ends or a
// bucket is not the one it replayed. url names the NATS server(s) in logs.
func (s *store) run(ctx context.Context, nc *nats.Conn, url string) {
	js, err := jetstream.New(nc)
	if err != nil {
		s.setState("store unavailable: " + err.Error())
		return
	}
	reconnected := nc.StatusChanged(nats.CONNECTED)
	defer nc.RemoveStatusListener(reconnected)
	for ctx.Err() == nil {
		if !s.open(ctx, js, nc, url) {
			return
		}
		s.follow(ctx, reconnected)
	}
}

// open opens (or creates) both buckets, retrying every half second until
// it can or ctx ends, and logs while it waits, with the URL it waits for.
func (s *store) open(ctx context.Context, js jetstream.JetStream, nc *nats.Conn, url string) bool {
	s.mu.Lock()
	bound := s.board != nil && !s.reopen
	s.reopen = false
	s.mu.Unlock()
	if bound {
		// The buckets were open and are still there: a reconnection or a
		// stale watch needs them replayed, not made again (an update of
		// their streams, which waits on JetStream's raft groups).
		return true
	}
	for attempt := 0; ; attempt++ {
		err := s.openOnce(ctx, js, nc)
		if err == nil {
			return true
		}
		state := "store unavailable: " + err.Error()
		if !nc.IsConnected() {
			state = "waiting for NATS"
		}
		s.setState(state)
		if attempt%10 == 0 && ctx.Err() == nil {
			s.log.Info("waiting for NATS JetStream", "url", url, "nats", nc.Status().String(), "err", err)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *store) openOnce(ctx context.Context, js jetstream.JetStream, nc *nats.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	replicas := s.replicas
	if replicas <= 0 {
		replicas = 1
		if nc.ConnectedClusterName() != "" {
			replicas = 3
		}
	}
	board, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      boardBucket,
		Description: "examples/realtime: the sticky board",
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
	if err != nil {
		return fmt.Errorf("open bucket %s: %w", boardBucket, err)
	}
	online, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:         onlineBucket,
		Description:    "examples/realtime: pages online per node",
		Storage:        jetstream.FileStorage,
		Replicas:       replicas,
		TTL:            onlineTTL,
		LimitMarkerTTL: time.Second,
	})
	if err != nil {
		return fmt.Errorf("open bucket %s: %w", onlineBucket, err)
	}
	s.mu.Lock()
	s.board, s.online = board, online
	s.mu.Unlock()
	return nil
}

// streamOf returns the creation time and last sequence of kv's stream.
func streamOf(ctx context.Context, kv jetstream.KeyValue) (time.Time, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	st, err := kv.Status(ctx)
	if err != nil {
		return time.Time{}, 0, err
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return time.Time{}, 0, errors.New("no stream info")
	}
	return bs.StreamInfo().Created, bs.StreamInfo().State.LastSeq, nil
}

// follow replays both buckets into the view and applies their changes
// until ctx ends, NATS reconnects, a watch ends, or a periodic check finds
// a bucket's stream gone or made anew.
func (s *store) follow(ctx context.Context, reconnected <-chan nats.Status) {
	for len(reconnected) > 0 { // the reconnection that brought us here
		<-reconnected
	}
	s.mu.Lock()
	s.lastSeq = [2]uint64{}
	s.mu.Unlock()
	board, online, _ := s.kvs()
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: deferred calls run last first
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan error, 2)
	s.replaying.Store(true)
	defer s.replaying.Store(false)
	fresh := s.fresh(ctx, board, online)
	var replayed sync.WaitGroup
	replayed.Add(2)
	wg.Go(func() {
		ended <- watchBucket(fctx, board, &replayed, func() *boardState { return newBoardState() },
			func(b *boardState) { s.view.installBoard(b, fresh[0]) }, s.view.applyBoard)
	})
	wg.Go(func() {
		ended <- watchBucket(fctx, online, &replayed, func() *onlineState { return newOnlineState() },
			func(o *onlineState) {
				// A key that aged out left only its marker, which also
				// ages out: count the stream's last sequence, as the
				// nodes that saw it live do.
				if _, last, err := streamOf(fctx, online); err == nil {
					o.rev = max(o.rev, last)
				}
				s.view.installOnline(o, fresh[1])
			},
			func(e jetstream.KeyValueEntry) { s.view.applyOnline(e); s.onOnline(e) })
	})
	loaded := make(chan struct{})
	wg.Go(func() {
		replayed.Wait()
		close(loaded)
	})
	check := time.NewTicker(checkEvery)
	defer check.Stop()
	s.mu.Lock()
	wait := max(s.replayWait, replayTimeout)
	s.replayWait = wait * 2 // until this replay completes: a slow machine is given longer each time
	s.mu.Unlock()
	replaying := time.NewTimer(wait)
	defer replaying.Stop()
	for {
		select {
		case <-replaying.C:
			if loaded != nil {
				s.log.Info("the board's buckets not replayed in time: replaying them again", "after", wait)
				return
			}
		case <-loaded:
			loaded = nil
			s.replaying.Store(false)
			// onLoad first: on the first load, it has the node's first
			// publishes out before pages are let in (s.loaded).
			s.onLoad()
			s.mu.Lock()
			s.replayWait = 0
			s.state = "ready"
			select {
			case <-s.loaded:
			default:
				close(s.loaded)
			}
			s.mu.Unlock()
		case <-reconnected:
			s.log.Info("NATS reconnected: replaying the board's buckets")
			return
		case <-s.stale:
			if loaded == nil { // else this replay brings it
				s.log.Info("a write did not come back from the watch: replaying the board's buckets", "after", staleAfter)
				return
			}
		case err := <-ended:
			s.log.Info("a watch of the board's buckets ended: opening them again", "err", err)
			if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
				s.mu.Lock()
				s.reopen = true
				s.mu.Unlock()
			}
			return
		case <-check.C:
			if err := s.check(ctx, board, online); err != nil {
				s.log.Warn("the board's buckets changed under this node: opening them again", "err", err)
				if !errors.Is(err, errStaleWatch) {
					s.mu.Lock()
					s.reopen = true
					s.mu.Unlock()
				}
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// fresh reports for each bucket whether its stream is not the one this
// node followed before (made anew: its revisions start again), and
// remembers the streams' creation times.
func (s *store) fresh(ctx context.Context, kvs ...jetstream.KeyValue) [2]bool {
	var fresh [2]bool
	for i, kv := range kvs {
		created, _, err := streamOf(ctx, kv)
		if err != nil {
			continue
		}
		s.mu.Lock()
		if !s.created[i].IsZero() && !created.Equal(s.created[i]) {
			fresh[i] = true
			s.log.Warn("bucket made anew: its revisions start again", "bucket", kv.Bucket())
		}
		s.created[i] = created
		s.mu.Unlock()
	}
	return fresh
}

// check returns an error when a bucket's stream is gone or is not the one
// this node replayed, or when the view has not reached the last sequence
// the previous check found. A server that does not answer is not an error
// here: the connection's pings find that.
func (s *store) check(ctx context.Context, kvs ...jetstream.KeyValue) error {
	s.view.mu.Lock()
	revs := [2]uint64{s.view.board.rev, s.view.online.rev}
	s.view.mu.Unlock()
	for i, kv := range kvs {
		created, last, err := streamOf(ctx, kv)
		if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("bucket %s: %w", kv.Bucket(), err)
		}
		if err != nil {
			continue
		}
		s.mu.Lock()
		known, before := s.created[i], s.lastSeq[i]
		s.lastSeq[i] = last
		s.mu.Unlock()
		if !known.IsZero() && !created.Equal(known) {
			return fmt.Errorf("bucket %s was made anew", kv.Bucket())
		}
		if revs[i] < before {
			return fmt.Errorf("%w: bucket %s at revision %d, the stream was at %d %v ago", errStaleWatch, kv.Bucket(), revs[i], before, checkEvery)
		}
	}
	return nil
}

// applier is a bucket's content being replayed.
type applier interface{ apply(jetstream.KeyValueEntry) }

// watchBucket replays kv into a fresh copy (made by fresh), hands it to
// install once complete (and marks replayed done), then applies every
// change with live, until ctx ends (nil) or the watch ends (its error).
func watchBucket[T applier](ctx context.Context, kv jetstream.KeyValue, replayed *sync.WaitGroup,
	fresh func() T, install func(T), live func(jetstream.KeyValueEntry)) error {
	replaying := true
	done := func() {
		if replaying {
			replaying = false
			replayed.Done()
		}
	}
	defer done()
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch bucket %s: %w", kv.Bucket(), err)
	}
	defer stopWatch(w)
	copy := fresh()
	for {
		select {
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return fmt.Errorf("watch of bucket %s ended", kv.Bucket())
			case e == nil: // the current state has been replayed
				install(copy)
				done()
			case replaying:
				copy.apply(e)
			default:
				live(e)
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// stopWatch stops w, in the background: nats.go's Stop deletes the watch's
// consumer with a request that waits up to 5 s for a server that does not
// answer (or until the connection closes), and nobody needs its answer.
// It drains what w still delivers, so that nats.go's goroutine blocked on
// the updates channel returns; for at most a second after Stop.
func stopWatch(w jetstream.KeyWatcher) {
	go func() {
		w.Stop()
		timeout := time.After(time.Second)
		for {
			select {
			case _, ok := <-w.Updates():
				if !ok {
					return
				}
			case <-timeout:
				return
			}
		}
	}()
}

// nextID takes the next note id, cluster-wide, by compare-and-set on the
// posted counter.
func (s *store) nextID(ctx context.Context) (int64, error) {
	board, _, err := s.kvs()
	if err != nil {
		return 0, err
	}
	for {
		var e jetstream.KeyValueEntry
		err := s.try(ctx, readTimeout, func(ctx context.Context) (err error) { e, err = board.Get(ctx, keyPosted); return err })
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if err := s.try(ctx, opTimeout, func(ctx context.Context) error { _, err := board.Create(ctx, keyPosted, []byte("1")); return err }); err == nil {
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
		err = s.try(ctx, opTimeout, func(ctx context.Context) error {
			_, err := board.Update(ctx, keyPosted, []byte(strconv.FormatInt(n+1, 10)), e.Revision())
			return err
		})
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
	board, _, err := s.kvs()
	if err != nil {
		return err
	}
	data, _ := json.Marshal(n)
	var rev uint64
	err = s.try(ctx, opTimeout, func(ctx context.Context) (err error) { rev, err = board.Put(ctx, noteKey(n.ID), data); return err })
	if err != nil {
		return err
	}
	return s.waitView(ctx, rev, false)
}

// like makes user like note id (or, if !on, no longer like it) by
// compare-and-set, and returns the note once this node's view has it,
// whether that changed it, and false when the note is not on the board.
func (s *store) like(ctx context.Context, id int64, user string, on bool) (Note, bool, bool, error) {
	board, _, err := s.kvs()
	if err != nil {
		return Note{}, false, false, err
	}
	for {
		// The bucket says whether the note exists (this node's view may
		// not have it yet, behind a watch that is catching up), the view
		// whether it was cleared.
		if s.view.cleared(id) {
			return Note{}, false, false, nil
		}
		var e jetstream.KeyValueEntry
		err := s.try(ctx, readTimeout, func(ctx context.Context) (err error) { e, err = board.Get(ctx, noteKey(id)); return err })
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return Note{}, false, false, nil
		}
		if err != nil {
			return Note{}, false, false, err
		}
		var n Note
		if err := json.Unmarshal(e.Value(), &n); err != nil {
			return Note{}, false, false, err
		}
		i := slices.Index(n.LikedBy, user)
		switch {
		case on == (i >= 0):
			return n, false, true, nil // as asked already
		case on:
			n.LikedBy = append(n.LikedBy, user)
			n.Likes++
		default:
			n.LikedBy = slices.Delete(n.LikedBy, i, i+1)
			n.Likes = max(0, n.Likes-1)
		}
		data, _ := json.Marshal(n)
		var rev uint64
		err = s.try(ctx, opTimeout, func(ctx context.Context) (err error) {
			rev, err = board.Update(ctx, noteKey(id), data, e.Revision())
			return err
		})
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue // liked or purged meanwhile: read again
		}
		if err != nil {
			return Note{}, false, false, err
		}
		return n, true, true, s.waitView(ctx, rev, false)
	}
}

// clear takes every note posted so far off the board, cluster-wide, with
// one write of the cleared key, and returns how many notes this node showed
// of those and the ids of the note keys to purge (housekeeping: the board
// no longer shows them either way).
func (s *store) clear(ctx context.Context, by string) (int, []int64, error) {
	board, _, err := s.kvs()
	if err != nil {
		return 0, nil, err
	}
	var upTo int64
	var e jetstream.KeyValueEntry
	err = s.try(ctx, readTimeout, func(ctx context.Context) (err error) { e, err = board.Get(ctx, keyPosted); return err })
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return 0, nil, err
	default:
		upTo, _ = strconv.ParseInt(string(e.Value()), 10, 64)
		// The notes posted up to upTo may still be on their way here.
		if err := s.waitView(ctx, e.Revision(), true); err != nil {
			return 0, nil, err
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
	for id := range s.view.board.notes {
		if id <= upTo {
			ids = append(ids, id)
		}
	}
	s.view.mu.Unlock()

	data, _ := json.Marshal(cleared{UpTo: upTo, By: by})
	var rev uint64
	err = s.try(ctx, opTimeout, func(ctx context.Context) (err error) { rev, err = board.Put(ctx, keyCleared, data); return err })
	if err != nil {
		return 0, nil, err
	}
	if err := s.waitView(ctx, rev, true); err != nil {
		return 0, nil, err
	}
	return n, ids, nil
}

// purge removes note keys that are off the board, best effort.
func (s *store) purge(ctx context.Context, ids []int64) {
	board, _, err := s.kvs()
	if err != nil {
		return
	}
	for _, id := range ids {
		if err := board.Purge(ctx, noteKey(id)); err != nil {
			s.log.Info("purge of a note off the board failed", "id", id, "err", err)
			return
		}
	}
}

// scrolledOff returns the ids of the notes that no longer fit on the
// board, for purge.
func (s *store) scrolledOff() []int64 {
	s.view.mu.Lock()
	defer s.view.mu.Unlock()
	shown := s.view.notesLocked()
	var ids []int64
	if len(shown) == maxNotes {
		for id := range s.view.board.notes {
			if id > s.view.board.cleared.UpTo && id < shown[0].ID {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// setOnline writes this node's page count; the watch brings it to the
// view.
func (s *store) setOnline(ctx context.Context, node string, pages int) error {
	_, online, err := s.kvs()
	if err != nil {
		return err
	}
	_, err = online.Put(ctx, node, []byte(strconv.Itoa(pages)))
	return err
}

// dropOnline deletes this node's page count, as it leaves.
func (s *store) dropOnline(ctx context.Context, node string) error {
	_, online, err := s.kvs()
	if err != nil {
		return err
	}
	return online.Delete(ctx, node)
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
