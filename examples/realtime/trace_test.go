package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/otel"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var _ cluster.Hook = (*otel.ClusterHook)(nil)

// traceNode is one application node for the trace tests: a Node and a
// topic.Hub on a HistoryStore, on its own NATS server of the cluster, each
// with the hooks of its own Telemetry, serving pages over WebSocket on
// loopback with the Telemetry's Interceptor. A page's ?name= registers it
// under that name. Its handlers: "relay" calls "whoami" on the page
// registered as alice (on any node); "post" publishes on the Hub's topic
// board; "shout" broadcasts "note" on the cluster topic room.
type traceNode struct {
	node *cluster.Node
	hub  *topic.Hub
	url  string
}

// tracing is a span recorder fed by every node and page of a test, each
// through a TracerProvider of its own whose resource names it
// (service.instance.id), as separate processes exporting to one collector.
type tracing struct{ spans *tracetest.SpanRecorder }

func (tr *tracing) telemetry(t *testing.T, who string) *otel.Telemetry {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tr.spans),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.instance.id", who))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tel, err := otel.New(otel.Options{
		TracerProvider: tp,
		Methods:        []string{"relay", "whoami", "post", "shout", "note", topic.MethodMessage},
		Topics:         []string{"board", "room"},
		TraceContext:   otel.MCPTraceContext,
		RemoteParent:   true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tel
}

func startTraceNode(t *testing.T, tr *tracing, natsURL, name string) *traceNode {
	t.Helper()
	tel := tr.telemetry(t, name)
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	node, err := cluster.New(nc, cluster.Options{NodeID: name, Hook: tel.ClusterHook()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := cluster.NewHistoryStore(nc, cluster.HistoryOptions{Hook: tel.ClusterHook(), Replicas: 1, Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	n := &traceNode{node: node, hub: &topic.Hub{Store: st, Allow: topic.AllowAll, Hook: tel.TopicHook()}}
	mux := jsonrpc.NewMux()
	n.hub.Register(mux)
	jsonrpc.Register(mux, "relay", func(ctx context.Context, _ any) (string, error) {
		var who string
		err := node.Call(ctx, "alice", "whoami", nil, &who)
		return who, err
	})
	jsonrpc.Register(mux, "post", func(ctx context.Context, p struct{ Text string }) (topic.Position, error) {
		return n.hub.Publish(ctx, "board", p)
	})
	jsonrpc.Register(mux, "shout", func(ctx context.Context, p struct{ Text string }) (bool, error) {
		return true, node.Topic("room").NotifyContext(ctx, "note", p)
	})
	srv := &ws.Server{
		Peer: jsonrpc.Options{Handler: mux, Interceptors: []jsonrpc.Interceptor{tel.Interceptor()}},
		OnConnect: func(p *jsonrpc.Peer, r *http.Request) {
			if who := r.URL.Query().Get("name"); who != "" {
				node.Register(who, p)
				node.Topic("room").Add(p)
			}
		},
	}
	hs := httptest.NewServer(srv)
	n.url = "ws" + strings.TrimPrefix(hs.URL, "http")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		hs.Close()
		n.hub.Close()
		node.Close()
		nc.Close()
	})
	return n
}

// tracePage is a page (a Go client Peer with its own Telemetry) on a node:
// it answers "whoami" with its name and hands on the params of every
// topic.message and "note" it gets.
type tracePage struct {
	peer *jsonrpc.Peer
	got  chan string // method of each notification served
}

func openTracePage(t *testing.T, tr *tracing, n *traceNode, name string) *tracePage {
	t.Helper()
	pg := &tracePage{got: make(chan string, 16)}
	mux := jsonrpc.NewMux()
	jsonrpc.Register(mux, "whoami", func(context.Context, any) (string, error) { return name, nil })
	for _, m := range []string{topic.MethodMessage, "note"} {
		mux.HandleFunc(m, func(context.Context, *jsonrpc.Request) (any, error) {
			pg.got <- m
			return nil, nil
		})
	}
	tel := tr.telemetry(t, "page-"+name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := ws.Dial(ctx, n.url+"?name="+name, ws.DialOptions{Peer: jsonrpc.Options{
		Handler: mux, Interceptors: []jsonrpc.Interceptor{tel.Interceptor()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(); p.Wait() })
	pg.peer = p
	return pg
}

func (pg *tracePage) await(t *testing.T, method string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case m := <-pg.got:
			if m == method {
				return
			}
		case <-deadline:
			t.Fatalf("the page got no %s within 20 s", method)
		}
	}
}

// hop is one span of a chain: its kind, name and who made it.
type hop struct{ kind, name, who string }

func (h hop) String() string { return h.who + ": " + h.kind + " " + h.name }

// chainTo waits (bounded) until a span matching last has ended with every
// ancestor it has in want, and returns the chain from the root to it.
func (tr *tracing) chainTo(t *testing.T, want []hop) []hop {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var best []hop
	for {
		spans := tr.spans.Ended()
		byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
		for _, s := range spans {
			byID[s.SpanContext().SpanID()] = s
		}
		last := want[len(want)-1]
		for _, s := range spans {
			if hopOf(s) != last {
				continue
			}
			var chain []hop
			tid := s.SpanContext().TraceID()
			for cur := s; cur != nil; cur = byID[cur.Parent().SpanID()] {
				if cur.SpanContext().TraceID() != tid {
					t.Fatalf("span %v is in trace %v, its child in %v", hopOf(cur), cur.SpanContext().TraceID(), tid)
				}
				chain = append([]hop{hopOf(cur)}, chain...)
				if !cur.Parent().IsValid() {
					break
				}
			}
			if equalHops(chain, want) {
				return chain
			}
			best = chain
		}
		if time.Now().After(deadline) {
			t.Fatalf("no trace ran\n  %v\nwithin 20 s; the nearest was\n  %v", want, best)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hopOf(s sdktrace.ReadOnlySpan) hop {
	who, _ := s.Resource().Set().Value("service.instance.id")
	return hop{s.SpanKind().String(), s.Name(), who.AsString()}
}

func equalHops(a, b []hop) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// traceCluster starts three NATS servers and two nodes, each on a
// server of its own, with pages bob on node1 and alice on node2.
func traceCluster(t *testing.T) (tr *tracing, n1, n2 *traceNode, bob, alice *tracePage) {
	t.Helper()
	c := runCluster(t)
	tr = &tracing{spans: tracetest.NewSpanRecorder()}
	urls := strings.Split(c.url(), ",")
	n1, n2 = startTraceNode(t, tr, urls[0], "node1"), startTraceNode(t, tr, urls[1], "node2")
	bob, alice = openTracePage(t, tr, n1, "bob"), openTracePage(t, tr, n2, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := alice.peer.Call(ctx, topic.MethodSubscribe, topic.SubscribeParams{Topic: "board"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*traceNode{n1, n2} {
		if err := n.node.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return tr, n1, n2, bob, alice
}

// TestTraceAcrossNodes: with the otel module's hooks on two nodes of a
// NATS cluster, one trace runs from a page's call through node 1, NATS
// and node 2 to the page that serves it; a Hub publish on node 1 and a
// cluster.Topic broadcast from it reach the page on node 2 in the trace of
// the call that made them.
func TestTraceAcrossNodes(t *testing.T) {
	tr, _, _, bob, alice := traceCluster(t)

	t.Run("call", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var who string
		if err := bob.peer.Call(ctx, "relay", nil, &who); err != nil || who != "alice" {
			t.Fatalf("relay: %q, %v", who, err)
		}
		tr.chainTo(t, []hop{
			{"client", "relay", "page-bob"},
			{"server", "relay", "node1"},
			{"client", "whoami", "node1"}, // cluster.Node.Call
			{"server", "whoami", "node2"}, // serving it from NATS
			{"client", "whoami", "node2"}, // Peer.Call to the page
			{"server", "whoami", "page-alice"},
		})
	})
	t.Run("publish", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := bob.peer.Call(ctx, "post", map[string]string{"text": "hi"}, nil); err != nil {
			t.Fatal(err)
		}
		alice.await(t, topic.MethodMessage)
		tr.chainTo(t, []hop{
			{"client", "post", "page-bob"},
			{"server", "post", "node1"},
			{"producer", "publish board", "node1"}, // topic.Hub.Publish
			{"consumer", "process board", "node2"}, // its delivery, from JetStream
			{"server", topic.MethodMessage, "page-alice"},
		})
	})
	t.Run("broadcast", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := bob.peer.Call(ctx, "shout", map[string]string{"text": "hey"}, nil); err != nil {
			t.Fatal(err)
		}
		alice.await(t, "note")
		tr.chainTo(t, []hop{
			{"client", "shout", "page-bob"},
			{"server", "shout", "node1"},
			{"producer", "publish room", "node1"}, // cluster.Topic.NotifyContext
			{"consumer", "process room", "node2"}, // its delivery, from NATS
			{"server", "note", "page-alice"},
		})
	})
}
