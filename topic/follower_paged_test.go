package topic_test

import (
	"strings"
	"testing"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// TestFollowerPagedCatchUp: a Follower asks for page after page, holding
// the live messages that arrive meanwhile, and hands the application each
// message once, in order.
func TestFollowerPagedCatchUp(t *testing.T) {
	hub := &topic.Hub{Allow: allowAll, MaxReplyMessages: 7, Store: &topic.Memory{MaxBytes: 4 << 20}}
	defer hub.Close()
	rec := newRecorder()
	f := rec.follower()
	fmux := jsonrpc.NewMux()
	f.Register(fmux)
	smux := jsonrpc.NewMux()
	hub.Register(smux)
	connect := func() (*jsonrpc.Peer, *jsonrpc.Peer) {
		a, b := jsonrpc.Pipe()
		return jsonrpc.NewPeer(b, jsonrpc.Options{Handler: fmux}), jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux})
	}
	client, server := connect()
	if err := f.Subscribe(testCtx(t), client, "t"); err != nil {
		t.Fatal(err)
	}
	epoch := rec.await(t, 1)[0]
	client.Close()
	server.Wait()
	fillHistory(t, hub, "t", 100, 10)
	client, server = connect()
	defer func() { client.Close(); server.Wait() }()
	go func() { fillHistory(t, hub, "t", 50, 10) }() // live, during the pages
	if err := f.Resubscribe(testCtx(t), client); err != nil {
		t.Fatal(err)
	}
	e := strings.TrimSuffix(strings.TrimPrefix(epoch, "reset "), ":0")
	if got, w := strings.Join(rec.await(t, 151), " "), strings.Join(want(e, 0, 1, 150), " "); got != w {
		t.Fatalf("the application saw\n\t%s\nwant\n\t%s", got, w)
	}
}
