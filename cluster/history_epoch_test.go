package cluster_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// epochFollower records what a topic.Follower hands the application,
// epochs included: "E:seq:data" and "reset E:seq".
type epochFollower struct {
	*topic.Follower
	mux *jsonrpc.Mux
	mu  sync.Mutex
	ev  []string
}

func newEpochFollower() *epochFollower {
	f := &epochFollower{mux: jsonrpc.NewMux()}
	f.Follower = &topic.Follower{
		OnMessage: func(m topic.Message) { f.add(fmt.Sprintf("%s:%d:%s", m.Epoch, m.Seq, m.Data)) },
		OnReset:   func(_ string, at topic.Position) { f.add(fmt.Sprintf("reset %s:%d", at.Epoch, at.Seq)) },
	}
	f.Register(f.mux)
	return f
}

func (f *epochFollower) add(s string) {
	f.mu.Lock()
	f.ev = append(f.ev, s)
	f.mu.Unlock()
}

func (f *epochFollower) events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ev...)
}

// TestHistoryStreamMadeAgainNewEpoch (issue 30, finding 13): a topic's
// stream deleted and made again is a new epoch on every node that had it
// open. A follower on node a, at seq 5 of the old stream, is not handed
// the new stream's messages as the old one's (6-9 of 9), but resets to
// the new epoch and goes on from there; so does one whose old stream was
// longer than the new one (100 messages, then 3), which a node following
// from where it was would never hear from again; and node a's own publish
// reports the new epoch.
func TestHistoryStreamMadeAgainNewEpoch(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	js, err := jetstream.New(connect(t, ns.ClientURL()))
	if err != nil {
		t.Fatal(err)
	}
	a := newHubSite(t, ns.ClientURL(), cluster.HistoryOptions{})
	b := newHubSite(t, ns.ClientURL(), cluster.HistoryOptions{})
	for _, tc := range []struct {
		name     string
		old, new int
	}{{"shorter", 5, 9}, {"longer", 100, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			room := "room-" + tc.name
			publishN(t, a, room, 1, tc.old)
			f := newEpochFollower()
			p, err := ws.Dial(testCtx(t, wait), a.url, ws.DialOptions{Peer: jsonrpc.Options{Handler: f.mux}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if err := f.Subscribe(testCtx(t, wait), p, room); err != nil {
				t.Fatal(err)
			}
			old, _ := f.Position(room)
			if err := js.DeleteStream(testCtx(t, wait), "jsonrpc_history_"+room); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= tc.new; i++ { // node b makes the stream again
				if _, err := b.hub.Publish(testCtx(t, wait), room, 100+i); err != nil {
					t.Fatal(err)
				}
			}
			var now topic.Position
			deadline := time.Now().Add(wait)
			for now, _ = f.Position(room); now.Epoch == old.Epoch || now.Seq != uint64(tc.new); now, _ = f.Position(room) {
				if time.Now().After(deadline) {
					t.Fatalf("the follower is at %+v, want the new stream's seq %d; the application saw %v", now, tc.new, f.events())
				}
				time.Sleep(2 * time.Millisecond)
			}
			for _, e := range f.events() {
				if strings.HasPrefix(e, old.Epoch+":") {
					t.Fatalf("the follower was handed %s as a message of the old stream; events %v", e, f.events())
				}
			}
			pos, err := a.hub.Publish(testCtx(t, wait), room, 999)
			if err != nil {
				t.Fatal(err)
			}
			if pos.Epoch != now.Epoch || pos.Seq != uint64(tc.new)+1 {
				t.Fatalf("node a published at %+v, want %s:%d", pos, now.Epoch, tc.new+1)
			}
			waitFor(t, "the follower to get it", func() bool {
				pos, _ := f.Position(room)
				return pos.Seq == uint64(tc.new)+1
			})
		})
	}
}
