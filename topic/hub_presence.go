package topic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// Presence on the Hub's side. Per topic with presence, while a connection
// of this Hub follows it, a presTopic keeps:
//
//   - local: the identities of this Hub's connections that follow it, with
//     how many each (a user with three tabs counts once in the store);
//   - stored: those this Hub has joined in the PresenceStore, brought in
//     line with local by sync, one topic at a time (pt.sync), never under
//     h.mu (the store may be remote);
//   - present: who the store says is present, from its Watch;
//   - told: what the subscribers were last told, and pending: the net
//     changes since (an identity that joined and left is in neither),
//     sent as one topic.presence a window (Hub.PresenceWindow) after the
//     first of them, so that a client that flaps costs the others at most
//     one notification per window, however fast it reconnects.
type presTopic struct {
	name   string
	subs   int            // this Hub's connections following it with presence (h.mu)
	local  map[string]int // identity -> this Hub's connections following it (h.mu)
	dirty  map[string]bool
	stored map[string]bool // identities joined in the store (pt.sync)
	sync   sync.Mutex      // held while calling the store for this topic
	queued bool            // a background sync is started and has not taken pt.sync yet (h.mu)
	stop   func()          // ends the store's Watch (pt.sync)

	watching bool            // present and told are set (h.mu)
	early    []presChange    // changes the Watch reported before it returned (h.mu)
	present  map[string]bool // who is present, live (h.mu)
	told     map[string]bool // who the subscribers were told is present (h.mu)
	pending  map[string]bool // identity -> present, where it differs from told (h.mu)
	version  uint64          // of the last topic.presence sent, from h.presVer (h.mu)
	list     []string        // present, sorted, cut to MaxPresence; nil: not made yet (h.mu)
	timer    *time.Timer     // armed while pending is not empty (h.mu)
	gone     bool            // no longer in h.pres (h.mu)
}

type presChange struct {
	id      string
	present bool
}

// errPresenceNoIdentity is what a subscribe gets from a Hub with Presence
// and no Identity: a configuration error of the server's.
var errPresenceNoIdentity = jsonrpc.NewError(jsonrpc.CodeInternalError, "topic presence misconfigured on the server", nil)

// presenceOn reports whether topic has presence, and fails when it has
// but the Hub cannot tell whose a connection is.
func (h *Hub) presenceOn(name string) (bool, error) {
	if h.Presence == nil || !h.Presence(name) {
		return false, nil
	}
	if h.Identity == nil {
		return false, errPresenceNoIdentity
	}
	return true, nil
}

// presenceAdd counts one more connection of id following name. h.mu held.
func (h *Hub) presenceAdd(name, id string) {
	pt := h.pres[name]
	if pt == nil {
		pt = &presTopic{name: name, local: make(map[string]int), dirty: make(map[string]bool), stored: make(map[string]bool)}
		if h.presVer > 0 {
			// Versions the Hub gave this topic before it was forgotten
			// (nobody here followed it) are lower: a client that comes
			// back reads a topic.members of a higher one
			// (TestReviewPresenceAfterReconnect).
			h.presVer++
			pt.version = h.presVer
		}
		if h.pres == nil {
			h.pres = make(map[string]*presTopic)
		}
		h.pres[name] = pt
	}
	pt.subs++
	if id != "" {
		pt.local[id]++
		pt.dirty[id] = true
	}
}

// presenceJoined tells the store of a subscribe's new member before its
// reply, so that a topic.members after the reply lists it; a subscribe
// that fails here is answered -32603 (try again).
func (h *Hub) presenceJoined(ctx context.Context, m *membership) error {
	if m == nil || !m.presence {
		return nil
	}
	h.mu.Lock()
	pt := h.pres[m.t.name]
	h.mu.Unlock()
	if pt == nil {
		return nil // Close, or the membership kicked meanwhile
	}
	return h.presenceSync(ctx, pt)
}

// presenceRemove counts one connection of id less following name, and
// has the store told in the background. h.mu held.
func (h *Hub) presenceRemove(name, id string) {
	pt := h.pres[name]
	if pt == nil {
		return
	}
	pt.subs--
	if id != "" {
		if pt.local[id]--; pt.local[id] <= 0 {
			delete(pt.local, id)
		}
		pt.dirty[id] = true
	}
	if h.closed || pt.queued {
		return // a background sync that has not started yet will see it
	}
	pt.queued = true
	if h.presCtx == nil {
		h.presCtx, h.presCancel = context.WithCancel(context.Background())
	}
	h.presWG.Add(1)
	ctx := h.presCtx
	go func() {
		defer h.presWG.Done()
		h.presenceSync(ctx, pt) // an error: see presenceSync
	}()
}

// presenceSync brings the store in line with pt.local, starting the
// store's Watch first if need be, and forgets pt once no connection of
// this Hub follows it. A Leave that fails is forgotten all the same: a
// store that outlives a node (the cluster's) expires what it no longer
// refreshes.
func (h *Hub) presenceSync(ctx context.Context, pt *presTopic) error {
	pt.sync.Lock()
	defer pt.sync.Unlock()
	h.mu.Lock()
	pt.queued = false // from here on, what changes is seen below
	subs, gone := pt.subs, pt.gone
	h.mu.Unlock()
	if gone {
		return nil
	}
	if pt.stop == nil && subs > 0 {
		if err := h.presenceWatch(ctx, pt); err != nil {
			return err
		}
	}
	var errs []error
	failed := make(map[string]bool)
	for {
		h.mu.Lock()
		dirty := pt.dirty
		pt.dirty = make(map[string]bool)
		want := make(map[string]bool, len(dirty))
		for id := range dirty {
			want[id] = pt.local[id] > 0
		}
		h.mu.Unlock()
		if len(dirty) == 0 {
			break
		}
		for id, in := range want {
			if err := h.presenceStore(ctx, pt, id, in); err != nil {
				errs = append(errs, err)
				failed[id] = in // a Leave that failed is not tried again
			}
		}
	}
	h.mu.Lock()
	for id, join := range failed {
		if join {
			pt.dirty[id] = true // the next sync tries again
		}
	}
	done := pt.subs == 0 && len(pt.dirty) == 0 && h.pres[pt.name] == pt
	if done {
		delete(h.pres, pt.name)
		pt.gone = true
		if pt.timer != nil {
			pt.timer.Stop()
		}
	}
	h.mu.Unlock()
	if done && pt.stop != nil {
		pt.stop()
	}
	return errors.Join(errs...)
}

// presenceStore joins or leaves id in the store, where it is not already.
// pt.sync held.
func (h *Hub) presenceStore(ctx context.Context, pt *presTopic, id string, in bool) error {
	switch {
	case in && !pt.stored[id]:
		if err := h.presStore().Join(ctx, pt.name, id); err != nil {
			return fmt.Errorf("topic: failed to record %q present on %q: %w", id, pt.name, err)
		}
		pt.stored[id] = true
	case !in && pt.stored[id]:
		delete(pt.stored, id)
		if err := h.presStore().Leave(ctx, pt.name, id); err != nil {
			return fmt.Errorf("topic: failed to record %q gone from %q: %w", id, pt.name, err)
		}
	}
	return nil
}

// presenceWatch starts the store's Watch of pt's topic. pt.sync held.
func (h *Hub) presenceWatch(ctx context.Context, pt *presTopic) error {
	present, stop, err := h.presStore().Watch(ctx, pt.name, func(id string, in bool) { h.presenceChange(pt, id, in) })
	if err != nil {
		return fmt.Errorf("topic: failed to watch the presence of %q: %w", pt.name, err)
	}
	h.mu.Lock()
	pt.present = make(map[string]bool, len(present))
	for _, id := range present {
		pt.present[id] = true
	}
	pt.told = make(map[string]bool, len(present))
	for id := range pt.present {
		pt.told[id] = true
	}
	pt.pending = make(map[string]bool)
	pt.watching = true
	early := pt.early
	pt.early = nil
	for _, c := range early {
		h.presenceChanged(pt, c.id, c.present)
	}
	h.mu.Unlock()
	pt.stop = stop
	return nil
}

// presenceChange is the store's Watch telling that id became present or
// absent on pt's topic.
func (h *Hub) presenceChange(pt *presTopic, id string, in bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case pt.gone:
	case !pt.watching:
		pt.early = append(pt.early, presChange{id, in})
	default:
		h.presenceChanged(pt, id, in)
	}
}

// presenceChanged files a change as pending, net of what the subscribers
// were told, and arms the window's timer. h.mu held.
func (h *Hub) presenceChanged(pt *presTopic, id string, in bool) {
	if in {
		pt.present[id] = true
	} else {
		delete(pt.present, id)
	}
	pt.list = nil
	if pt.told[id] == in {
		delete(pt.pending, id)
	} else {
		pt.pending[id] = in
	}
	if len(pt.pending) > 0 && pt.timer == nil && !h.closed {
		window := h.PresenceWindow
		if window <= 0 {
			window = DefaultPresenceWindow * time.Millisecond
		}
		pt.timer = time.AfterFunc(window, func() { h.presenceFlush(pt) })
	}
}

// presenceFlush runs a window after a topic's first pending change: it
// sends the net changes to the topic's subscribers as one topic.presence.
func (h *Hub) presenceFlush(pt *presTopic) {
	h.mu.Lock()
	pt.timer = nil
	if pt.gone || h.closed || len(pt.pending) == 0 {
		h.mu.Unlock()
		return
	}
	var joined, left []string
	for id, in := range pt.pending {
		if in {
			joined = append(joined, id)
			pt.told[id] = true
		} else {
			left = append(left, id)
			delete(pt.told, id)
		}
	}
	clear(pt.pending)
	h.presVer++ // one counter for all the Hub's topics: never backwards
	pt.version = h.presVer
	pt.list = nil
	max := bound(h.MaxPresence, DefaultMaxPresence)
	ev := PresenceParams{Topic: pt.name, Count: len(pt.told), Version: pt.version}
	ev.Joined, ev.More = sortedCut(joined, max, false)
	ev.Left, ev.More = sortedCut(left, max, ev.More)
	var g *jsonrpc.Group
	if t := h.topics[pt.name]; t != nil {
		g = &t.group
	}
	h.mu.Unlock()
	if g != nil {
		// Notify fails only if the params cannot be marshalled: strings
		// and numbers.
		_ = g.Notify(MethodPresence, ev)
	}
}

// sortedCut sorts ids and cuts them to max (negative: no bound), saying
// whether it cut, or more was already true.
func sortedCut(ids []string, max int, more bool) ([]string, bool) {
	slices.Sort(ids)
	if max >= 0 && len(ids) > max {
		return ids[:max:max], true
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, more
}

// presStore is the Hub's PresenceStore.
func (h *Hub) presStore() PresenceStore {
	if h.PresenceStore != nil {
		return h.PresenceStore
	}
	return &h.presMem
}

// stopPresence takes the topics with presence out of the Hub, their
// timers stopped. h.mu held, by Close.
func (h *Hub) stopPresence() (map[string]*presTopic, context.CancelFunc) {
	pres := h.pres
	h.pres = nil
	for _, pt := range pres {
		pt.gone = true
		if pt.timer != nil {
			pt.timer.Stop()
		}
	}
	return pres, h.presCancel
}

// closeLeaveTimeout bounds how long Close waits for the PresenceStore to
// take back what the Hub joined in it.
const closeLeaveTimeout = 5 * time.Second

// closePresence stops every topic's presence: timers, background syncs,
// watches, and Leaves in the store every identity this Hub joined there,
// within closeLeaveTimeout in all: a store may be shared with other Hubs
// (a MemoryPresence of the process, the cluster's), which would
// otherwise list them for ever, or until it expires them
// (TestReviewClosedHubLeavesNoPresence).
func (h *Hub) closePresence(pres map[string]*presTopic, cancel context.CancelFunc) {
	if cancel != nil {
		cancel()
	}
	h.presWG.Wait()
	ctx, stop := context.WithTimeout(context.Background(), closeLeaveTimeout)
	defer stop()
	for _, pt := range pres {
		pt.sync.Lock()
		if pt.stop != nil {
			pt.stop()
			pt.stop = nil
		}
		for id := range pt.stored {
			if ctx.Err() == nil {
				_ = h.presStore().Leave(ctx, pt.name, id) // a store that fails expires it
			}
			delete(pt.stored, id)
		}
		pt.sync.Unlock()
	}
}
