//go:build unix

package main

import (
	"errors"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
)

// TestNudgeAcrossNodes pins board.nudge: a page on one node calls
// page.nudge on the page of the user it names on another node (through
// NATS, cluster.Node.Call), signed with the caller's session user, and
// gets the page's answer; a name nobody holds is -32014 with the name.
func TestNudgeAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the demo and runs two processes")
	}
	bin := buildDemo(t)
	_, nodes := startCluster(t, bin, 2)
	alice := dialPage(t, nodes[0].url, "alice", "alice")
	bob := dialPage(t, nodes[1].url, "bob", "not-bob")
	var got Nudged
	deadline := time.Now().Add(20 * time.Second)
	for { // bob's name reaches node 1 through NATS
		err := alice.Call(t.Context(), "board.nudge", map[string]string{"to": "bob"}, &got)
		if err == nil {
			break
		}
		if e := (*jsonrpc.Error)(nil); !errors.As(err, &e) || e.Code != CodeNotOnline || time.Now().After(deadline) {
			t.Fatalf("board.nudge bob: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !got.Seen {
		t.Errorf("board.nudge bob: %+v, want seen", got)
	}
	if from := next(t, bob.nudged, "page.nudge on bob's page"); from != "alice" {
		t.Errorf("page.nudge from %q, want alice (the caller's session)", from)
	}
	err := bob.Call(t.Context(), "board.nudge", map[string]string{"to": "nobody"}, nil)
	var e *jsonrpc.Error
	if !errors.As(err, &e) || e.Code != CodeNotOnline || string(e.Data) != `{"to":"nobody"}` {
		t.Errorf("board.nudge nobody: %v, want -32014 with the name", err)
	}
}
