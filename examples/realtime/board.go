package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/topic"
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
	// LikedBy lists who likes the note, each user once: a like is once
	// per person (board.like adds the caller, unlike takes them off).
	LikedBy []string `json:"likedBy,omitempty"`
}

// Liked is the params of the board.liked notification: the note as it is
// now, who liked it (or took the like back, Liked false).
type Liked struct {
	Note
	By    string `json:"by"`
	Liked bool   `json:"liked"`
}

// Cleared is the result of board.clear: how many notes it took off.
type Cleared struct {
	Cleared int `json:"cleared"`
}

// ClearedBy is the params of the board.cleared notification: who cleared
// the board.
type ClearedBy struct {
	By string `json:"by"`
}

// Stats is the board's summary, the result of board.stats and the params
// of the board.stats notification pushed whenever it changes.
//
// A reply and a notification travel separately, and pushes come from
// whichever node made the change, so a page may get an older summary after
// a newer one: Version orders them (see store.go: the same changes give
// the same version on every node), and a page keeps the summary with the
// highest.
type Stats struct {
	Notes   int   `json:"notes"`   // notes on the board now
	Posted  int64 `json:"posted"`  // notes ever posted on the board, on every node
	Online  int   `json:"online"`  // pages connected, to every node
	Version int64 `json:"version"` // grows with every change
}

// Board is the shared state every page sees. Its methods are the JSON-RPC
// methods pages call. The state is in JetStream (store.go), the same on
// every node; the board pushes changes to every page on every node through
// its audience, and calls back into a page (page.confirm) before it clears
// the board. Its handlers take the user from their ctx (userFrom): they
// serve connections that requireSession let through.
//
// Why events go out through the Topic from the node that made the change,
// rather than each node deriving them from its watch and pushing to its own
// pages: the Topic is the pages' audience across nodes (that is what the
// demo shows), one change makes one message however many nodes there are,
// and the node that served the call is the one that knows what happened
// (who cleared the board; a like, not just a new version of a note). That
// node sends only after its own view has the change, so its board.list
// agrees with what it announced; other nodes' views follow within the
// watch's delay. The watch alone speaks for a node that cannot: when a
// crashed node's page count ages out, the first live node (by key) pushes
// the new stats.
type Board struct {
	log    *slog.Logger
	store  *store
	nodes  *cluster.Node
	pages  *cluster.Topic // pages that have not subscribed to the topic "board", on every node
	topics *topic.Hub     // the topic "board", with its history in JetStream
	node   string         // this node's key in the online bucket

	nc  *natsConn
	url string // where NATS is, for /healthz

	countMu      sync.Mutex
	online       int           // pages connected to this node, guarded by countMu
	countChanged chan struct{} // 1-buffered: keepOnline has a count to write

	// housekeeping purges note keys off the board, after the change that
	// took them off was acknowledged; bg holds those goroutines, ended
	// with ctx (keepOnline's).
	bg  sync.WaitGroup
	ctx context.Context

	// pushMu orders this node's stats pushes; never held while waiting
	// for the watch, which may push (onlineChanged).
	pushMu    sync.Mutex
	lastStats int64       // version of the last stats this node pushed
	topicMade atomic.Bool // loaded has published on the topic, so that it has its stream
}

// NewBoard returns the board kept in st, announcing to its pages through
// the Topic "board" of nodes, for the node with key node in the online
// bucket. nc is the nodes' NATS connection, url where it goes (for
// /healthz).
func NewBoard(log *slog.Logger, st *store, nodes *cluster.Node, hist topic.Store, nc *natsConn, url, node string) *Board {
	b := &Board{log: log, store: st, nodes: nodes, pages: nodes.Topic("board"), node: node,
		nc: nc, url: url, countChanged: make(chan struct{}, 1), ctx: context.Background()}
	b.topics = &topic.Hub{Store: hist, Allow: func(_ context.Context, name string) error {
		if name != boardTopic {
			return topic.ErrNoSuchTopic
		}
		return nil
	}}
	st.onOnline = b.onlineChanged
	st.onLoad = b.loaded
	return b
}

// Bounds on what may wait for NATS: joinFlush on a page's connection
// (OnConnect), callTimeout on each handler's JetStream work, writeTimeout
// on each write of this node's page count (off every page's path), and
// dropTimeout on its delete as the node stops. A node that stops ends
// what waits at once (callCtx).
const (
	joinFlush    = 250 * time.Millisecond
	callTimeout  = 5 * time.Second
	writeTimeout = 2 * time.Second
	dropTimeout  = 500 * time.Millisecond
)

// callCtx is the ctx of a handler's JetStream work: ctx, for at most
// callTimeout, and until the board stops.
func (b *Board) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	stop := context.AfterFunc(b.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// boardTopic is the one topic pages may subscribe to (topic.subscribe).
const boardTopic = "board"

// Mux returns the methods pages may call:
//
//	board.list  → [Note]           all notes, oldest first
//	board.stats → Stats
//	board.post  {text} → Note      signed by the session's user; error -32010 unless 1..140 characters
//	board.like  {id, unlike} → Note   the caller likes the note (once: again changes nothing), or
//	                                 with unlike no longer does; error -32011 for an unknown id
//	board.clear → {cleared: n}     error -32012 unless the page confirms
//	board.nudge {to} → {seen}      page.nudge on a page of the user to, on any node; error -32014 if none
//	topic.subscribe {topic: "board", since?} → {topic, epoch, seq, recovered, messages}
//	topic.unsubscribe {topic: "board"} → true
//
// the methods the server calls on the page that asked to clear, and on a
// page whose user was nudged (from another node's page, through NATS):
//
//	page.confirm {question, notes} → bool
//	page.nudge {from} → bool
//
// and the notifications pushed to every page, on every node: board.posted
// Note, board.liked Liked (sent only when a like changed), board.cleared
// {by}, board.stats Stats. The page
// that made the change hears of it too (a Topic has no "all but one"): a
// page renders notes by id, so its own note or like twice is the same.
//
// A page that subscribes to the topic "board" (package topic's protocol)
// gets the same news as topic.message notifications instead, each with a
// position and data {"method": "board.posted", "params": Note} (and so on
// for the other three), and from then on not the plain notifications: on
// reconnecting, to any node, it subscribes with its position and gets
// what it missed from the topic's history in JetStream (1 MiB, 5 minutes),
// or recovered false, and then fetches the board with board.list.
func (b *Board) Mux() *jsonrpc.Mux {
	m := jsonrpc.NewMux()
	topics := jsonrpc.NewMux()
	b.topics.Register(topics)
	// A page subscribed to the topic gets the news through it only: it
	// leaves the plain audience once subscribed (news in between may come
	// both ways; a page renders notes by id), and joins it again when it
	// unsubscribes.
	m.Handle(topic.MethodSubscribe, b.audience(topics, (*cluster.Topic).Remove))
	m.Handle(topic.MethodUnsubscribe, b.audience(topics, (*cluster.Topic).Add))
	jsonrpc.Register(m, "board.list", b.list)
	jsonrpc.Register(m, "board.stats", func(context.Context, struct{}) (Stats, error) { return b.Stats(), nil })
	jsonrpc.Register(m, "board.post", b.post)
	jsonrpc.Register(m, "board.like", b.like)
	jsonrpc.Register(m, "board.clear", b.clear)
	jsonrpc.Register(m, "board.nudge", b.nudge)
	describe(m)
	return m
}

// Join adds a newly connected page to the board's audience, and counts it.
// It waits for NATS at most joinFlush, and only while connected.
func (b *Board) Join(p *jsonrpc.Peer) {
	b.pages.Add(p)
	b.countPages(+1)
	// The node's first page subscribes it to the topic; Flush returns once
	// NATS has the subscription, so that the page misses no broadcast from
	// another node after it loads the board.
	if !b.nc.connected() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), joinFlush)
	defer cancel()
	if err := b.nodes.Flush(ctx); err != nil {
		b.log.Info("cluster flush failed: this page may miss other nodes' news for a moment", "err", err)
	}
}

// Left takes a page that went away out of the audience and the count, so
// that the others see the new online count.
func (b *Board) Left(p *jsonrpc.Peer) {
	b.pages.Remove(p)
	b.countPages(-1)
}

// countPages changes this node's page count and has keepOnline write it:
// it never waits.
func (b *Board) countPages(delta int) {
	b.countMu.Lock()
	b.online += delta
	b.countMu.Unlock()
	select {
	case b.countChanged <- struct{}{}:
	default: // a write is pending; it takes the latest count
	}
}

// keepOnline writes this node's page count when it changes and every
// onlineRefresh (so that it does not age out), retrying every second while
// a write fails, until ctx ends; then it deletes it, waiting at most one
// second. The watch brings each write back, and onlineChanged pushes the
// stats.
func (b *Board) keepOnline(ctx context.Context) {
	refresh := time.NewTicker(onlineRefresh)
	defer refresh.Stop()
	var retry <-chan time.Time
	for {
		select {
		case <-b.countChanged:
		case <-refresh.C:
		case <-retry:
		case <-ctx.Done():
			if !b.nc.connected() {
				return // it ages out: nothing to wait for
			}
			dctx, cancel := context.WithTimeout(context.Background(), dropTimeout)
			defer cancel()
			if err := b.store.dropOnline(dctx, b.node); err != nil {
				b.log.Info("cannot delete this node's page count; it ages out", "err", err)
			}
			return
		}
		retry = nil
		b.countMu.Lock()
		n := b.online
		b.countMu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err := b.store.setOnline(wctx, b.node, n)
		cancel()
		b.store.report(err)
		if err != nil && ctx.Err() == nil {
			if !errors.Is(err, errNotLoaded) {
				b.log.Info("cannot write this node's page count; trying again", "err", err)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				b.store.suspect()
			}
			retry = time.After(time.Second)
		}
	}
}

// housekeep purges the note keys ids in the background.
func (b *Board) housekeep(ids []int64) {
	if len(ids) == 0 {
		return
	}
	b.bg.Go(func() {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		b.store.purge(ctx, ids)
	})
}

// onlineChanged is called by the online bucket's watch. A node pushes the
// stats when its own count comes back from the bucket. When another node's
// count goes (deleted as it left, or aged out as it died without a word),
// the first live node (by key) pushes them.
func (b *Board) onlineChanged(e jetstream.KeyValueEntry) {
	if e.Key() == b.node {
		if e.Operation() == jetstream.KeyValuePut {
			b.pushStats()
		}
		return
	}
	if e.Operation() == jetstream.KeyValuePut {
		return // that node pushes
	}
	b.store.view.mu.Lock()
	first := true
	for node := range b.store.view.online.counts {
		if node < b.node {
			first = false
		}
	}
	b.store.view.mu.Unlock()
	if first {
		b.pushStats()
	}
}

// localPages returns the number of pages connected to this node.
func (b *Board) localPages() int {
	b.countMu.Lock()
	defer b.countMu.Unlock()
	return b.online
}

// Stats returns the board's summary, as this node's view has it.
func (b *Board) Stats() Stats {
	b.store.view.mu.Lock()
	defer b.store.view.mu.Unlock()
	return b.store.view.statsLocked()
}

// pushStats sends the current stats to every page, unless this node has
// already sent stats as new. The lock keeps this node's pushes in version
// order (Notify only queues and publishes).
func (b *Board) pushStats() bool {
	b.pushMu.Lock()
	defer b.pushMu.Unlock()
	s := b.Stats()
	if s.Version <= b.lastStats {
		return false
	}
	b.lastStats = s.Version
	b.notify(context.Background(), "board.stats", s)
	return true
}

// loaded runs once the board is loaded (after every replay): it pushes
// the stats and, on a fresh board (nothing to push yet), publishes them on
// the topic "board" alone, so that the topic has its stream (made by its
// first publish) before pages subscribe to it, and none of them starts on
// a topic without one (epoch "none") to reset at the first post.
func (b *Board) loaded() {
	if b.pushStats() || b.topicMade.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, writeTimeout)
	defer cancel()
	if _, err := b.topics.Publish(ctx, boardTopic, news{Method: "board.stats", Params: b.Stats()}); err != nil {
		b.log.Info("cannot publish on the topic \"board\" yet", "err", err)
		return
	}
	b.topicMade.Store(true)
}

// audience serves a topic method with h and, when it succeeds for the
// topic "board", moves the page in or out of the plain audience with move.
func (b *Board) audience(h jsonrpc.Handler, move func(*cluster.Topic, *jsonrpc.Peer)) jsonrpc.Handler {
	return jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		res, err := h.ServeRPC(ctx, req)
		var p struct {
			Topic string `json:"topic"`
		}
		if err == nil && json.Unmarshal(req.Params, &p) == nil && p.Topic == boardTopic {
			if peer := jsonrpc.PeerFromContext(ctx); peer != nil {
				move(b.pages, peer)
			}
		}
		return res, err
	})
}

// notify tells every page of a change: those that subscribed to the topic
// through it (and its history), the others with a plain notification.
// ctx is the change's (a handler's, with its span: the news joins its
// trace); the publish is bounded by writeTimeout and the board's life,
// not by ctx's end.
func (b *Board) notify(ctx context.Context, method string, params any) {
	if err := b.pages.NotifyContext(ctx, method, params); err != nil {
		b.log.Warn("broadcast failed", "method", method, "err", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	defer context.AfterFunc(b.ctx, cancel)()
	if _, err := b.topics.Publish(ctx, boardTopic, news{Method: method, Params: params}); err != nil {
		b.log.Warn("broadcast failed", "topic", boardTopic, "method", method, "err", err)
		if errors.Is(err, context.DeadlineExceeded) {
			b.store.suspect() // the server may have stopped answering
		}
	}
}

// news is the data of a message on the topic "board": the method and
// params of the plain notification it stands for.
type news struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

func (b *Board) list(context.Context, struct{}) ([]Note, error) {
	b.store.view.mu.Lock()
	defer b.store.view.mu.Unlock()
	return b.store.view.notesLocked(), nil
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
	ctx, cancel := b.callCtx(ctx)
	defer cancel()
	id, err := b.store.nextID(ctx)
	if err != nil {
		return Note{}, b.storeFailed("post", err)
	}
	note := Note{ID: id, Text: text, Author: author, Time: time.Now().UTC().Truncate(time.Second)}
	if err := b.store.putNote(ctx, note); err != nil {
		return Note{}, b.storeFailed("post", err)
	}
	b.store.report(nil)
	b.notify(ctx, "board.posted", note)
	b.pushStats()
	b.housekeep(b.store.scrolledOff())
	return note, nil
}

// like makes the caller like the note (unlike: no longer like it), once
// per person: liking again, or taking back a like never given, changes
// nothing and tells nobody.
func (b *Board) like(ctx context.Context, p struct {
	ID     int64 `json:"id"`
	Unlike bool  `json:"unlike,omitempty"`
}) (Note, error) {
	user, ok := userFrom(ctx)
	if !ok {
		return Note{}, errNotSignedIn
	}
	ctx, cancel := b.callCtx(ctx)
	defer cancel()
	liked, changed, ok, err := b.store.like(ctx, p.ID, user, !p.Unlike)
	if err != nil {
		return Note{}, b.storeFailed("like", err)
	}
	if !ok {
		return Note{}, jsonrpc.NewError(CodeNoSuchID, "no such note", map[string]int64{"id": p.ID})
	}
	if changed {
		b.notify(ctx, "board.liked", Liked{Note: liked, By: user, Liked: !p.Unlike})
	}
	return liked, nil
}

// clear takes every note off the board, on every node, once the page that
// asked has confirmed, and tells every page who did.
func (b *Board) clear(ctx context.Context, _ struct{}) (Cleared, error) {
	by, ok := userFrom(ctx)
	if !ok {
		return Cleared{}, errNotSignedIn
	}
	if err := b.confirm(ctx, b.Stats().Notes); err != nil {
		return Cleared{}, err
	}
	sctx, cancel := b.callCtx(ctx)
	defer cancel()
	n, ids, err := b.store.clear(sctx, by)
	if err != nil {
		return Cleared{}, b.storeFailed("clear", err)
	}
	b.housekeep(ids)
	b.notify(sctx, "board.cleared", ClearedBy{By: by})
	b.pushStats()
	return Cleared{Cleared: n}, nil
}

// storeFailed logs a failed JetStream operation and returns the error a
// page gets: an internal error, without the details.
func (b *Board) storeFailed(op string, err error) error {
	b.log.Warn("board store failed", "op", op, "err", err)
	b.store.report(err)
	return jsonrpc.NewError(jsonrpc.CodeInternalError, "the board is unavailable; try again", nil)
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

// health serves GET /healthz, at once in every state: 200 while this node
// is connected to NATS with the board's buckets followed, else 503. The
// body's state says which:
//
//	starting             the board is not loaded yet
//	waiting for NATS     not loaded yet, NATS not reachable (nats says where)
//	connected            200: posts, likes and other nodes' news work
//	reconnecting         NATS lost after start: this node's pages are
//	                     served from its copy of the board; changes fail
//	store unavailable    NATS is up but the buckets cannot be opened or
//	                     followed (JetStream away, no quorum); err says why
//
// Either way the node goes on serving its own pages: board.list and
// board.stats are answered from its copy of the board.
func (b *Board) health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	storeState, loaded := b.store.status()
	h := struct {
		Node   string `json:"node"`
		State  string `json:"state"`
		NATS   string `json:"nats"`
		URL    string `json:"url"`
		Server string `json:"server,omitempty"` // the server connected to, of those in url
		Store  string `json:"store"`
		Pages  int    `json:"pages"`
	}{Node: b.node, NATS: strings.ToLower(b.nc.statusText()), URL: b.url, Server: b.nc.serverURL(),
		Store: storeState, Pages: b.localPages()}
	connected := b.nc.connected()
	switch {
	case !loaded && !connected:
		h.State = "waiting for NATS"
	case !loaded:
		h.State = "starting"
	case !connected:
		h.State = "reconnecting"
		h.Store = "this node's pages are served from its copy of the board; changes need NATS"
	case storeState != "ready":
		h.State = "store unavailable"
	default:
		h.State = "connected"
	}
	if h.State != "connected" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(h)
}
