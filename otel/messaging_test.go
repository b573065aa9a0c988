package otel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/otel"
	"github.com/peerwire/jsonrpc/topic"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// subscriber is a client Peer subscribed to name on a Pipe to a server
// serving hub; the raw params of the topic.message notifications it gets
// arrive on the channel.
func subscriber(t *testing.T, hub *topic.Hub, name string) <-chan json.RawMessage {
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Call(ctx, topic.MethodSubscribe, topic.SubscribeParams{Topic: name}, nil); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	return got
}

func receive(t *testing.T, ch <-chan json.RawMessage) json.RawMessage {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no topic.message within 10 s")
		return nil
	}
}

func publishOn(t *testing.T, hub *topic.Hub, name string) (topic.Position, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return hub.Publish(ctx, name, map[string]int{"n": 1})
}

// TestTopicHookSpans: a Hub publish is a PRODUCER span "publish board",
// its delivery a CONSUMER span "process board" whose parent is the
// publish span and which links to it, each with the messaging attributes.
func TestTopicHookSpans(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{Topics: []string{"board"}})
	hub := &topic.Hub{Allow: topic.AllowAll, Hook: tel.TopicHook()}
	defer hub.Close()
	sub := subscriber(t, hub, "board")
	pos, err := publishOn(t, hub, "board")
	if err != nil {
		t.Fatal(err)
	}
	receive(t, sub)
	spans := r.waitSpans(t, 2)
	pub := find(spans, "publish board", trace.SpanKindProducer)
	proc := find(spans, "process board", trace.SpanKindConsumer)
	if pub == nil || proc == nil {
		t.Fatalf("spans %v, want PRODUCER publish board and CONSUMER process board", names(spans))
	}
	id := pos.Epoch + ":1"
	for _, c := range []struct {
		span  sdktrace.ReadOnlySpan
		want  map[string]string
		label string
	}{
		{pub, map[string]string{"messaging.system": "peerwire.topic", "messaging.destination.name": "board",
			"messaging.operation.type": "send", "messaging.operation.name": "publish", "messaging.message.id": id}, "publish"},
		{proc, map[string]string{"messaging.system": "peerwire.topic", "messaging.destination.name": "board",
			"messaging.operation.type": "process", "messaging.operation.name": "process", "messaging.message.id": id}, "process"},
	} {
		got := attrs(c.span.Attributes())
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s span: %s = %q, want %q", c.label, k, got[k], v)
			}
		}
	}
	if proc.Parent().SpanID() != pub.SpanContext().SpanID() || proc.SpanContext().TraceID() != pub.SpanContext().TraceID() {
		t.Errorf("process span's parent is %v, want the publish span %v", proc.Parent().SpanID(), pub.SpanContext().SpanID())
	}
	if l := proc.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != pub.SpanContext().SpanID() {
		t.Errorf("process span links %v, want one link to the publish span", l)
	}
}

// TestTopicHookUnlistedTopicName: a topic not on Options.Topics names its
// spans by their operation alone; the attribute keeps the name.
func TestTopicHookUnlistedTopicName(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{})
	hub := &topic.Hub{Allow: topic.AllowAll, Hook: tel.TopicHook()}
	defer hub.Close()
	sub := subscriber(t, hub, "user:alice")
	if _, err := publishOn(t, hub, "user:alice"); err != nil {
		t.Fatal(err)
	}
	receive(t, sub)
	spans := r.waitSpans(t, 2)
	pub, proc := find(spans, "publish", trace.SpanKindProducer), find(spans, "process", trace.SpanKindConsumer)
	if pub == nil || proc == nil {
		t.Fatalf("spans %v, want publish and process", names(spans))
	}
	if got := attrs(pub.Attributes())["messaging.destination.name"]; got != "user:alice" {
		t.Errorf("messaging.destination.name = %q, want user:alice", got)
	}
}

// TestTopicHookTraceContextInMessage: with MCPTraceContext, every
// subscriber's topic.message carries the delivery span's traceparent in
// params._meta, the same bytes for all of them.
func TestTopicHookTraceContextInMessage(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{TraceContext: otel.MCPTraceContext, Topics: []string{"board"}})
	hub := &topic.Hub{Allow: topic.AllowAll, Hook: tel.TopicHook()}
	defer hub.Close()
	sub1, sub2 := subscriber(t, hub, "board"), subscriber(t, hub, "board")
	if _, err := publishOn(t, hub, "board"); err != nil {
		t.Fatal(err)
	}
	m1, m2 := receive(t, sub1), receive(t, sub2)
	if !bytes.Equal(m1, m2) {
		t.Errorf("the subscribers got different params:\n%s\n%s", m1, m2)
	}
	proc := find(r.waitSpans(t, 2), "process board", trace.SpanKindConsumer)
	if proc == nil {
		t.Fatal("no process span")
	}
	var p struct {
		Meta struct {
			Traceparent string `json:"traceparent"`
		} `json:"_meta"`
		Topic string `json:"topic"`
	}
	if err := json.Unmarshal(m1, &p); err != nil {
		t.Fatal(err)
	}
	sc := proc.SpanContext()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if p.Meta.Traceparent != want || p.Topic != "board" {
		t.Errorf("topic.message params %s, want _meta.traceparent %s and topic board", m1, want)
	}
}

// TestTopicHookNoTraceContextByDefault: without Options.TraceContext the
// topic.message params carry nothing more, though the spans are made.
func TestTopicHookNoTraceContextByDefault(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{})
	hub := &topic.Hub{Allow: topic.AllowAll, Hook: tel.TopicHook()}
	defer hub.Close()
	sub := subscriber(t, hub, "board")
	if _, err := publishOn(t, hub, "board"); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, sub); strings.Contains(string(m), "_meta") {
		t.Errorf("topic.message params %s carry _meta with TraceContext off", m)
	}
	r.waitSpans(t, 2)
}

// refusingStore's logs refuse every Append.
type refusingStore struct{ mem topic.Memory }

func (s *refusingStore) Open(ctx context.Context, name string, d func(topic.Position, json.RawMessage)) (topic.Log, error) {
	l, err := s.mem.Open(ctx, name, d)
	return refusingLog{l}, err
}

type refusingLog struct{ topic.Log }

func (refusingLog) Append(context.Context, json.RawMessage) (topic.Position, error) {
	return topic.Position{}, errors.New("no room")
}

// TestTopicHookFailedPublish: a publish whose Append fails ends its span
// with status Error and error.type _OTHER.
func TestTopicHookFailedPublish(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{Topics: []string{"board"}})
	hub := &topic.Hub{Allow: topic.AllowAll, Hook: tel.TopicHook(), Store: &refusingStore{}}
	defer hub.Close()
	if _, err := publishOn(t, hub, "board"); err == nil {
		t.Fatal("Publish succeeded")
	}
	pub := find(r.waitSpans(t, 1), "publish board", trace.SpanKindProducer)
	if pub == nil || pub.Status().Code != codes.Error || attrs(pub.Attributes())["error.type"] != "_OTHER" {
		t.Errorf("publish span %v, want status Error and error.type _OTHER", pub)
	}
}

// TestInjectOffIsFree: with no TraceContext, Inject returns the params it
// was given, the same bytes, and allocates nothing.
func TestInjectOffIsFree(t *testing.T) {
	tel, err := otel.New()
	if err != nil {
		t.Fatal(err)
	}
	params := json.RawMessage(`{"a":1}`)
	ctx := context.Background()
	if got := tel.Inject(ctx, params); &got[0] != &params[0] || len(got) != len(params) {
		t.Errorf("Inject returned %s, a copy; want params themselves", got)
	}
	if n := testing.AllocsPerRun(100, func() { tel.Inject(ctx, params) }); n != 0 {
		t.Errorf("Inject allocated %v times with TraceContext off, want 0", n)
	}
}

// TestTopicHookFollowerTakesMeta: a topic.Follower (the Go client) takes
// a topic.message whose params carry _meta as any other: the message
// reaches OnMessage, its data intact.
func TestTopicHookFollowerTakesMeta(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{TraceContext: otel.MCPTraceContext})
	hub := &topic.Hub{Allow: topic.AllowAll, Hook: tel.TopicHook()}
	defer hub.Close()
	mux := jsonrpc.NewMux()
	hub.Register(mux)
	got := make(chan topic.Message, 4)
	f := &topic.Follower{OnMessage: func(m topic.Message) { got <- m }}
	cmux := jsonrpc.NewMux()
	f.Register(cmux)
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: mux})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: cmux})
	defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.Subscribe(ctx, client, "board"); err != nil {
		t.Fatal(err)
	}
	if _, err := publishOn(t, hub, "board"); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m.Topic != "board" || m.Seq != 1 || string(m.Data) != `{"n":1}` {
			t.Errorf("OnMessage got %+v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnMessage was not called within 10 s")
	}
}

// TestInjectIntoGroup: Inject puts the trace context into params once,
// and every member of a jsonrpc.Group gets it through Notify.
func TestInjectIntoGroup(t *testing.T) {
	r := newRig(t)
	tel := r.telemetry(t, otel.Options{TraceContext: otel.MCPTraceContext})
	ctx, span := r.tp.Tracer("test").Start(context.Background(), "broadcast")
	defer span.End()
	var g jsonrpc.Group
	var chans []chan json.RawMessage
	for range 2 {
		ch := make(chan json.RawMessage, 1)
		mux := jsonrpc.NewMux()
		mux.HandleFunc("note", func(_ context.Context, req *jsonrpc.Request) (any, error) {
			ch <- bytes.Clone(req.Params)
			return nil, nil
		})
		a, b := jsonrpc.Pipe()
		server, client := jsonrpc.NewPeer(a), jsonrpc.NewPeer(b, jsonrpc.Options{Handler: mux})
		defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
		g.Add(server)
		chans = append(chans, ch)
	}
	if err := g.Notify("note", tel.Inject(ctx, json.RawMessage(`{"x":1}`))); err != nil {
		t.Fatal(err)
	}
	sc := span.SpanContext()
	want := `{"_meta":{"traceparent":"00-` + sc.TraceID().String() + "-" + sc.SpanID().String() + `-01"},"x":1}`
	for i, ch := range chans {
		if got := receive(t, ch); string(got) != want {
			t.Errorf("member %d got %s, want %s", i, got, want)
		}
	}
}
