package topic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

type hookKey struct{}

// fakeHook is a topic.Hook that marks a publish's ctx, records what each
// call saw, and adds "_meta" to the params it is given.
type fakeHook struct {
	mu        sync.Mutex
	published []string // "topic seq err"
	delivered []string // "topic seq mark"
	finished  int      // Deliver's done calls
}

func (h *fakeHook) Publish(ctx context.Context, name string) (context.Context, func(topic.Position, error)) {
	ctx = context.WithValue(ctx, hookKey{}, "publish:"+name)
	return ctx, func(pos topic.Position, err error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.published = append(h.published, name+" "+itoa(pos.Seq)+" "+errText(err))
	}
}

func (h *fakeHook) Deliver(ctx context.Context, name string, pos topic.Position, params json.RawMessage) (json.RawMessage, func()) {
	mark, _ := ctx.Value(hookKey{}).(string)
	h.mu.Lock()
	h.delivered = append(h.delivered, name+" "+itoa(pos.Seq)+" "+mark)
	h.mu.Unlock()
	out := append([]byte(`{"_meta":{"mark":"`+mark+`"},`), params[1:]...)
	return out, func() {
		h.mu.Lock()
		h.finished++
		h.mu.Unlock()
	}
}

func (h *fakeHook) snapshot() (published, delivered []string, finished int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.published...), append([]string(nil), h.delivered...), h.finished
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return "err"
}

// rawSubscriber is a client Peer over a Pipe to a server serving hub, which
// keeps the raw params of every topic.message it gets.
func rawSubscriber(t *testing.T, hub *topic.Hub, name string) <-chan json.RawMessage {
	t.Helper()
	mux := jsonrpc.NewMux()
	hub.Register(mux)
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux})
	got := make(chan json.RawMessage, 16)
	cmux := jsonrpc.NewMux()
	cmux.HandleFunc(topic.MethodMessage, func(_ context.Context, r *jsonrpc.Request) (any, error) {
		got <- bytes.Clone(r.Params)
		return nil, nil
	})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: cmux})
	t.Cleanup(func() {
		client.Close()
		server.Close()
		client.Wait()
		server.Wait()
	})
	if err := subscribeOn(testCtx(t), client, name); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	return got
}

func nextRaw(t *testing.T, got <-chan json.RawMessage) json.RawMessage {
	t.Helper()
	select {
	case m := <-got:
		return m
	case <-time.After(wait):
		t.Fatal("no topic.message")
		return nil
	}
}

// TestHubHookDeliveryHasPublishContext: with a Hook and the Memory store,
// each message's one Deliver gets the ctx its Publish returned, and every
// subscriber gets the params Deliver returned (marshalled once: the
// same bytes for both).
func TestHubHookDeliveryHasPublishContext(t *testing.T) {
	h := &fakeHook{}
	hub := &topic.Hub{Allow: topic.AllowAll, Hook: h}
	defer hub.Close()
	sub1 := rawSubscriber(t, hub, "board")
	sub2 := rawSubscriber(t, hub, "board")
	publish(t, hub, "board", map[string]int{"x": 1})

	want := `{"_meta":{"mark":"publish:board"},"topic":"board","epoch":`
	for _, sub := range []<-chan json.RawMessage{sub1, sub2} {
		if got := nextRaw(t, sub); !bytes.HasPrefix(got, []byte(want)) || !bytes.HasSuffix(got, []byte(`"seq":1,"data":{"x":1}}`)) {
			t.Errorf("a subscriber got %s, want %s...\"seq\":1,\"data\":{\"x\":1}}", got, want)
		}
	}
	published, delivered, finished := h.snapshot()
	if len(published) != 1 || published[0] != "board 1 ok" {
		t.Errorf("Publish's done saw %q, want [board 1 ok]", published)
	}
	if len(delivered) != 1 || delivered[0] != "board 1 publish:board" || finished != 1 {
		t.Errorf("Deliver saw %q (done %d times), want one [board 1 publish:board], done once", delivered, finished)
	}
}

// plainStore is a Store that is not a ContextStore.
type plainStore struct{ m topic.Memory }

func (s *plainStore) Open(ctx context.Context, name string, deliver func(topic.Position, json.RawMessage)) (topic.Log, error) {
	return s.m.Open(ctx, name, deliver)
}

// TestHubHookStoreWithoutContext: a Store that cannot give a delivery's
// context still has its deliveries go through the Hook, with no context
// of the publish (context.Background()).
func TestHubHookStoreWithoutContext(t *testing.T) {
	h := &fakeHook{}
	hub := &topic.Hub{Allow: topic.AllowAll, Hook: h, Store: &plainStore{}}
	defer hub.Close()
	sub := rawSubscriber(t, hub, "board")
	publish(t, hub, "board", 7)
	if got := nextRaw(t, sub); !bytes.HasPrefix(got, []byte(`{"_meta":{"mark":""},"topic":"board"`)) {
		t.Errorf("the subscriber got %s, want the hook's _meta with no mark", got)
	}
	if _, delivered, _ := h.snapshot(); len(delivered) != 1 || delivered[0] != "board 1 " {
		t.Errorf("Deliver saw %q, want [\"board 1 \"]", delivered)
	}
}

// TestHubHookSeesFailedPublish: Publish's done gets Append's error.
func TestHubHookSeesFailedPublish(t *testing.T) {
	h := &fakeHook{}
	hub := &topic.Hub{Allow: topic.AllowAll, Hook: h, Store: failingStore{}}
	defer hub.Close()
	if _, err := hub.Publish(testCtx(t), "board", 1); err == nil {
		t.Fatal("Publish succeeded on a failing store")
	}
	if published, _, _ := h.snapshot(); len(published) != 1 || published[0] != "board 0 err" {
		t.Errorf("Publish's done saw %q, want [board 0 err]", published)
	}
}

// failingStore's logs fail every Append.
type failingStore struct{}

func (failingStore) Open(context.Context, string, func(topic.Position, json.RawMessage)) (topic.Log, error) {
	return failingLog{}, nil
}

type failingLog struct{}

func (failingLog) Append(context.Context, json.RawMessage) (topic.Position, error) {
	return topic.Position{}, errAppend
}
func (failingLog) Since(context.Context, *topic.Position, topic.Limit) (topic.History, error) {
	return topic.History{}, nil
}
func (failingLog) Tail(context.Context, int, topic.Limit) (topic.History, error) {
	return topic.History{}, nil
}
func (failingLog) Idle() bool   { return true }
func (failingLog) Close() error { return nil }

var errAppend = errors.New("append refused")
