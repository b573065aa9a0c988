package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/topic"
)

// traceKey holds a fake trace id in a ctx.
type traceKey struct{}

const hdrFakeTrace = "Fake-Trace"

var _ cluster.Hook = (*fakeHook)(nil)

// fakeHook is a cluster.Hook that carries the ctx's fake trace id in a
// header across NATS, and into params' "_meta", recording every Start as
// "kind name method trace".
type fakeHook struct {
	mu  sync.Mutex
	ops []string
}

func (h *fakeHook) Start(ctx context.Context, op, name, method string, header map[string][]string) (context.Context, func(error)) {
	switch op {
	case cluster.OpPublish, cluster.OpCall, cluster.OpNotify, cluster.OpAppend:
		if id, _ := ctx.Value(traceKey{}).(string); id != "" {
			header[hdrFakeTrace] = []string{id}
		}
	default:
		if v := header[hdrFakeTrace]; len(v) == 1 {
			ctx = context.WithValue(ctx, traceKey{}, v[0])
		}
	}
	id, _ := ctx.Value(traceKey{}).(string)
	h.mu.Lock()
	h.ops = append(h.ops, op+" "+name+" "+method+" "+id)
	h.mu.Unlock()
	return ctx, func(error) {}
}

func (h *fakeHook) Params(ctx context.Context, params json.RawMessage) json.RawMessage {
	id, _ := ctx.Value(traceKey{}).(string)
	meta := `{"_meta":{"trace":"` + id + `"}`
	if len(params) < 2 || params[0] != '{' {
		return json.RawMessage(meta + "}")
	}
	if bytes.Equal(params, []byte("{}")) {
		return json.RawMessage(meta + "}")
	}
	return append([]byte(meta+","), params[1:]...)
}

// has reports whether h recorded op.
func (h *fakeHook) has(op string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.ops, op)
}

func (h *fakeHook) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

func traced(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, traceKey{}, id)
}

// rawPage is a WebSocket client of a site that keeps the raw params of
// every "note" it gets and answers "echo" with the params it got.
type rawPage struct {
	notes chan json.RawMessage
	calls chan json.RawMessage
}

func openRawPage(t *testing.T, s *site, query string) *rawPage {
	t.Helper()
	pg := &rawPage{notes: make(chan json.RawMessage, 16), calls: make(chan json.RawMessage, 16)}
	mux := jsonrpc.NewMux()
	mux.HandleFunc("note", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		pg.notes <- bytes.Clone(r.Params)
		return nil, nil
	})
	mux.HandleFunc("echo", func(_ context.Context, r *jsonrpc.Request) (any, error) {
		pg.calls <- bytes.Clone(r.Params)
		return json.RawMessage(bytes.Clone(r.Params)), nil
	})
	dial(t, s, query, jsonrpc.Options{Handler: mux})
	return pg
}

func next(t *testing.T, ch <-chan json.RawMessage, what string) json.RawMessage {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(wait):
		t.Fatalf("no %s", what)
		return nil
	}
}

// TestHookTopicAcrossNodes: a Topic broadcast published with a ctx
// carries what the Hook put in its NATS headers to the other node, whose
// members get the params Params made for that context, as do the
// publishing node's own members (which NATS does not carry).
func TestHookTopicAcrossNodes(t *testing.T) {
	ns := startNATS(t, -1)
	ha, hb := &fakeHook{}, &fakeHook{}
	a := newSite(t, ns.ClientURL(), cluster.Options{Hook: ha}, joinRoom)
	b := newSite(t, ns.ClientURL(), cluster.Options{Hook: hb}, joinRoom)
	pa, pb := openRawPage(t, a, ""), openRawPage(t, b, "")
	flush(t, a, b)

	if err := a.node.Topic("room").NotifyContext(traced(context.Background(), "t1"), "note", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	want := `{"_meta":{"trace":"t1"},"n":1}`
	if got := next(t, pa.notes, "note on node a"); string(got) != want {
		t.Errorf("node a's member got %s, want %s", got, want)
	}
	if got := next(t, pb.notes, "note on node b"); string(got) != want {
		t.Errorf("node b's member got %s, want %s", got, want)
	}
	if !ha.has("publish room note t1") || !ha.has("process room note t1") {
		t.Errorf("node a's hook saw %q, want publish and process of room with t1", ha.list())
	}
	if !hb.has("process room note t1") {
		t.Errorf("node b's hook saw %q, want process room note t1", hb.list())
	}
}

// TestHookCallAcrossNodes: a Node.Call crossing NATS carries its ctx's
// trace in the headers; the serving node's Start reads it, and the ctx it
// returns is the one the holder's Peer.Call runs with (an interceptor of
// that Peer sees it).
func TestHookCallAcrossNodes(t *testing.T) {
	ns := startNATS(t, -1)
	ha, hb := &fakeHook{}, &fakeHook{}
	a := newSite(t, ns.ClientURL(), cluster.Options{Hook: ha}, registerByQuery)
	b := newSite(t, ns.ClientURL(), cluster.Options{Hook: hb}, registerByQuery)
	seen := make(chan string, 4)
	b.srv.Peer.Interceptors = []jsonrpc.Interceptor{func(ctx context.Context, info *jsonrpc.CallInfo, next jsonrpc.Invoker) (any, error) {
		if info.Outbound && info.Method == "echo" {
			id, _ := ctx.Value(traceKey{}).(string)
			seen <- id
		}
		return next(ctx)
	}}
	openRawPage(t, b, "name=alice")
	flush(t, a, b)

	var res map[string]int
	if err := a.node.Call(traced(testCtx(t, wait), "t2"), "alice", "echo", map[string]int{"n": 2}, &res); err != nil || res["n"] != 2 {
		t.Fatalf("Call: %v, %v", res, err)
	}
	select {
	case id := <-seen:
		if id != "t2" {
			t.Errorf("node b's Peer.Call ran with trace %q, want t2", id)
		}
	case <-time.After(wait):
		t.Fatal("node b's Peer never called echo")
	}
	if !ha.has("call alice echo t2") || !hb.has("serve alice echo t2") {
		t.Errorf("hooks saw a %q, b %q; want call and serve of alice echo with t2", ha.list(), hb.list())
	}
}

// TestHookNotifyAcrossNodes: a Node.Notify to a name held on another node
// carries its trace there, into the params the holder gets.
func TestHookNotifyAcrossNodes(t *testing.T) {
	ns := startNATS(t, -1)
	ha, hb := &fakeHook{}, &fakeHook{}
	a := newSite(t, ns.ClientURL(), cluster.Options{Hook: ha}, registerByQuery)
	b := newSite(t, ns.ClientURL(), cluster.Options{Hook: hb}, registerByQuery)
	pg := openRawPage(t, b, "name=bob")
	flush(t, a, b)

	if err := a.node.Notify(traced(testCtx(t, wait), "t3"), "bob", "note", []int{3}); err != nil {
		t.Fatal(err)
	}
	// An array has no room for _meta: the fake hook's Params makes an
	// object of it, which shows it ran with the ctx Start gave.
	if got, want := next(t, pg.notes, "note"), `{"_meta":{"trace":"t3"}}`; string(got) != want {
		t.Errorf("bob got %s, want %s", got, want)
	}
	if !ha.has("notify bob note t3") || !hb.has("notified bob note t3") {
		t.Errorf("hooks saw a %q, b %q; want notify and notified of bob note with t3", ha.list(), hb.list())
	}
}

// topicHook is a topic.Hook that records the fake trace each delivery's
// ctx carries.
type topicHook struct{ delivered chan string }

func (h *topicHook) Publish(ctx context.Context, _ string) (context.Context, func(topic.Position, error)) {
	return ctx, func(topic.Position, error) {}
}

func (h *topicHook) Deliver(ctx context.Context, name string, pos topic.Position, params json.RawMessage) (json.RawMessage, func()) {
	id, _ := ctx.Value(traceKey{}).(string)
	h.delivered <- name + " " + id
	return params, func() {}
}

// TestHistoryHookCarriesContext: a topic.Hub publish on one node, through
// a HistoryStore with a Hook, reaches the other node's Hub.Hook with the
// publish's context, read back from the stream message's headers.
func TestHistoryHookCarriesContext(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	hook := &fakeHook{}
	hubs := make([]*topic.Hub, 2)
	hooks := make([]*topicHook, 2)
	for i := range hubs {
		st, err := cluster.NewHistoryStore(connect(t, ns.ClientURL()), cluster.HistoryOptions{Hook: hook, Memory: true})
		if err != nil {
			t.Fatal(err)
		}
		hooks[i] = &topicHook{delivered: make(chan string, 16)}
		hubs[i] = &topic.Hub{Store: st, Allow: topic.AllowAll, Hook: hooks[i]}
		t.Cleanup(func() { hubs[i].Close() })
	}
	// A subscriber on node 1 keeps the topic open there.
	mux := jsonrpc.NewMux()
	hubs[1].Register(mux)
	c, s := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(s, jsonrpc.Options{Handler: mux})
	client := jsonrpc.NewPeer(c)
	t.Cleanup(func() { client.Close(); server.Close(); client.Wait(); server.Wait() })
	if err := client.Call(testCtx(t, wait), topic.MethodSubscribe, topic.SubscribeParams{Topic: "board"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := hubs[0].Publish(traced(testCtx(t, wait), "t4"), "board", 1); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-hooks[1].delivered:
		if got != "board t4" {
			t.Errorf("node 1's Hub.Hook delivered %q, want \"board t4\"", got)
		}
	case <-time.After(wait):
		t.Fatal("no delivery on node 1")
	}
	if !hook.has("append board  t4") || !hook.has("follow board  t4") {
		t.Errorf("the store's hook saw %q, want append and follow of board with t4", hook.list())
	}
}
