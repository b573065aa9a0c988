//go:build unix

package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// boardStreams are the JetStream streams a post needs: the board's
// buckets, and the topic "board" that announces it.
var boardStreams = []string{"KV_board", "KV_board_online", "realtime_history_board"}

// streamLeader returns the name of the server leading stream, or "".
func streamLeader(t *testing.T, js jetstream.JetStream, stream string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil || st.CachedInfo().Cluster == nil {
		return ""
	}
	return st.CachedInfo().Cluster.Leader
}

// moveLeadersOff has every JetStream raft group that p leads and a post
// needs (the meta group, boardStreams) step down, until another server
// leads it (within 30 s): a server paused then stalls the nodes connected
// to it, which is what a node can do something about, and not every
// node's writes for the raft election (4 to 9 s in nats-server 2.15,
// not configurable), which TestChaos measures apart.
func (c *procCluster) moveLeadersOff(p *natsProc) {
	t := c.t
	t.Helper()
	app, err := nats.Connect(c.url())
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	sys, err := nats.Connect(c.url(), nats.UserInfo("sys", "sys"))
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	js, err := jetstream.New(app)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		moved := true
		if c.leader() == p {
			moved = false
			sys.Request("$JS.API.META.LEADER.STEPDOWN", nil, 2*time.Second)
		}
		for _, st := range boardStreams {
			if streamLeader(t, js, st) == p.name {
				moved = false
				app.Request("$JS.API.STREAM.LEADER.STEPDOWN."+st, nil, 2*time.Second)
			}
		}
		if moved {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still leads a group a post needs 30 s after its stepdowns", p.name)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// leaderOf returns the process leading stream.
func (c *procCluster) leaderOf(stream string) *natsProc {
	t := c.t
	t.Helper()
	app, err := nats.Connect(c.url())
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	js, err := jetstream.New(app)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		name := streamLeader(t, js, stream)
		for _, p := range c.procs {
			if p.name == name {
				return p
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no leader of %s", stream)
	return nil
}

// watchLeader watches, through the servers other than old, for another
// leader of stream than old, until the returned function is called; it
// returns how long after the call to watchLeader the new leader was
// seen, or "not within" the time it watched.
func (c *procCluster) watchLeader(stream string, old *natsProc) func() string {
	var urls []string
	for _, p := range c.procs {
		if p != old {
			urls = append(urls, p.url())
		}
	}
	start := time.Now()
	stop := make(chan struct{})
	result := make(chan string, 1)
	go func() {
		nc, err := nats.Connect(strings.Join(urls, ","))
		if err != nil {
			result <- err.Error()
			return
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		for {
			select {
			case <-stop:
				result <- fmt.Sprintf("not within %v", time.Since(start).Round(100*time.Millisecond))
				return
			case <-time.After(200 * time.Millisecond):
			}
			if l := streamLeader(c.t, js, stream); l != "" && l != old.name {
				result <- time.Since(start).Round(100 * time.Millisecond).String()
				return
			}
		}
	}()
	return func() string {
		close(stop)
		return <-result
	}
}
