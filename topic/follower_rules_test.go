package topic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/topic"
)

// recorder records what a Follower hands the application, as lines like
// "E:6" (a message) and "reset E:5".
type recorder struct {
	mu     sync.Mutex
	events []string
	resets int
	more   chan struct{} // 1-buffered: something was recorded
}

func newRecorder() *recorder { return &recorder{more: make(chan struct{}, 1)} }

func (r *recorder) follower() *topic.Follower {
	return &topic.Follower{
		OnMessage: func(m topic.Message) { r.add(fmt.Sprintf("%s:%d", m.Epoch, m.Seq)) },
		OnReset: func(_ string, at topic.Position) {
			r.mu.Lock()
			r.resets++
			r.mu.Unlock()
			r.add(fmt.Sprintf("reset %s:%d", at.Epoch, at.Seq))
		},
	}
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// await waits until n events are recorded, and returns them.
func (r *recorder) await(t testing.TB, n int) []string {
	t.Helper()
	deadline := time.After(wait)
	for {
		if ev := r.snapshot(); len(ev) >= n {
			return ev
		}
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("timed out waiting for %d events; have %v", n, r.snapshot())
		}
	}
}

// TestFollowerRules drives a Follower against a scripted server and pins
// TOPICS.md's client rules: messages held while a subscribe is in flight,
// then applied after the reply; duplicates dropped; a gap re-subscribes
// with since; another epoch re-subscribes without since and resets; a
// reply's messages already seen are dropped.
func TestFollowerRules(t *testing.T) {
	rec := newRecorder()
	f := rec.follower()
	fmux := jsonrpc.NewMux()
	f.Register(fmux)
	handled := make(chan struct{}, 100) // one per topic.message the Follower has handled
	clientHandler := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		res, err := fmux.ServeRPC(ctx, req)
		if req.Method == topic.MethodMessage {
			handled <- struct{}{}
		}
		return res, err
	})

	var server *jsonrpc.Peer
	live := func(epoch string, seq uint64) {
		t.Helper()
		if err := server.Notify(testCtx(t), topic.MethodMessage, topic.Message{Topic: "t", Epoch: epoch, Seq: seq, Data: json.RawMessage(`null`)}); err != nil {
			t.Fatal(err)
		}
	}
	awaitHandled := func(n int) {
		for range n {
			select {
			case <-handled:
			case <-time.After(wait):
				t.Fatal("the Follower did not handle a live message")
			}
		}
	}
	entries := func(from, to uint64) []topic.Entry {
		var es []topic.Entry
		for s := from; s <= to; s++ {
			es = append(es, topic.Entry{Seq: s, Data: json.RawMessage(`null`)})
		}
		return es
	}
	var calls []string // the since of each subscribe the server got
	script := []func() topic.SubscribeResult{
		func() topic.SubscribeResult { // the first: live 6 and 7 held until this reply
			live("E", 6)
			live("E", 7)
			awaitHandled(2)
			return topic.SubscribeResult{Epoch: "E", Seq: 5}
		},
		func() topic.SubscribeResult { // after the gap at 10: 11 comes live before the reply
			live("E", 11)
			awaitHandled(1)
			return topic.SubscribeResult{Epoch: "E", Seq: 10, Recovered: true, Messages: entries(9, 10)}
		},
		func() topic.SubscribeResult { // after epoch F appeared live
			return topic.SubscribeResult{Epoch: "F", Seq: 1}
		},
		func() topic.SubscribeResult { // Resubscribe: a reply overlapping what was seen
			return topic.SubscribeResult{Epoch: "F", Seq: 3, Recovered: true, Messages: entries(1, 3)}
		},
	}
	smux := jsonrpc.NewMux()
	jsonrpc.Register(smux, topic.MethodSubscribe, func(ctx context.Context, p topic.SubscribeParams) (topic.SubscribeResult, error) {
		if p.Since == nil {
			calls = append(calls, "none")
		} else {
			calls = append(calls, fmt.Sprintf("%s:%d", p.Since.Epoch, p.Since.Seq))
		}
		if len(calls) > len(script) {
			return topic.SubscribeResult{}, fmt.Errorf("unexpected subscribe %d", len(calls))
		}
		res := script[len(calls)-1]()
		res.Topic = p.Topic
		if res.Messages == nil {
			res.Messages = []topic.Entry{}
		}
		return res, nil
	})
	a, b := jsonrpc.Pipe()
	server = jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: clientHandler})
	defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()

	if err := f.Subscribe(testCtx(t), client, "t"); err != nil {
		t.Fatal(err)
	}
	rec.await(t, 3)
	live("E", 7) // a duplicate
	live("E", 8)
	rec.await(t, 4)
	live("E", 10) // 9 is missing: subscribe since E:8
	rec.await(t, 7)
	live("F", 1) // another epoch: subscribe without since
	rec.await(t, 8)
	live("F", 2)
	rec.await(t, 9)
	if err := f.Resubscribe(testCtx(t), client); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(rec.await(t, 10), " ")
	want := "reset E:5 E:6 E:7 E:8 E:9 E:10 E:11 reset F:1 F:2 F:3"
	if got != want {
		t.Errorf("the application saw\n\t%s\nwant\n\t%s", got, want)
	}
	if got, want := strings.Join(calls, " "), "none E:8 none F:2"; got != want {
		t.Errorf("subscribes since %s, want %s", got, want)
	}
	if pos, ok := f.Position("t"); !ok || pos != (topic.Position{Epoch: "F", Seq: 3}) {
		t.Errorf("Position = %+v, %v; want F:3", pos, ok)
	}
}

// TestFollowerBufferOverflow: more live messages than MaxBuffered while a
// subscribe is in flight are dropped and recovered by another subscribe
// with since, so the application still sees each once, in order.
func TestFollowerBufferOverflow(t *testing.T) {
	rec := newRecorder()
	f := rec.follower()
	f.MaxBuffered = 2
	fmux := jsonrpc.NewMux()
	f.Register(fmux)
	handled := make(chan struct{}, 100)
	clientHandler := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		res, err := fmux.ServeRPC(ctx, req)
		handled <- struct{}{}
		return res, err
	})
	var server *jsonrpc.Peer
	var sinces []string
	smux := jsonrpc.NewMux()
	jsonrpc.Register(smux, topic.MethodSubscribe, func(ctx context.Context, p topic.SubscribeParams) (topic.SubscribeResult, error) {
		if p.Since == nil {
			sinces = append(sinces, "none")
			for s := uint64(1); s <= 5; s++ {
				server.Notify(ctx, topic.MethodMessage, topic.Message{Topic: "t", Epoch: "E", Seq: s})
			}
			for range 5 {
				<-handled
			}
			return topic.SubscribeResult{Topic: "t", Epoch: "E", Seq: 0, Messages: []topic.Entry{}}, nil
		}
		sinces = append(sinces, fmt.Sprintf("%s:%d", p.Since.Epoch, p.Since.Seq))
		var es []topic.Entry
		for s := p.Since.Seq + 1; s <= 5; s++ {
			es = append(es, topic.Entry{Seq: s, Data: json.RawMessage(`null`)})
		}
		return topic.SubscribeResult{Topic: "t", Epoch: "E", Seq: 5, Recovered: true, Messages: es}, nil
	})
	a, b := jsonrpc.Pipe()
	server = jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: clientHandler})
	defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
	if err := f.Subscribe(testCtx(t), client, "t"); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(rec.await(t, 6), " "), "reset E:0 E:1 E:2 E:3 E:4 E:5"; got != want {
		t.Errorf("the application saw %s, want %s", got, want)
	}
	if got := strings.Join(sinces, " "); got != "none E:0" {
		t.Errorf("subscribes since %s, want none E:0", got)
	}
}

// TestFollowerUnsubscribe: a topic unsubscribed is no longer handed to the
// application, and Resubscribe leaves it out.
func TestFollowerUnsubscribe(t *testing.T) {
	hub := topic.Hub{Allow: topic.AllowAll}
	defer hub.Close()
	smux := jsonrpc.NewMux()
	hub.Register(smux)
	var mu sync.Mutex
	var got []string
	f := &topic.Follower{OnMessage: func(m topic.Message) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%s:%d", m.Topic, m.Seq))
		mu.Unlock()
	}}
	cmux := jsonrpc.NewMux()
	f.Register(cmux)
	a, b := jsonrpc.Pipe()
	server := jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux})
	client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: cmux})
	defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
	for _, name := range []string{"a", "b"} {
		if err := f.Subscribe(testCtx(t), client, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Unsubscribe(testCtx(t), client, "b"); err != nil {
		t.Fatal(err)
	}
	if err := f.Resubscribe(testCtx(t), client); err != nil {
		t.Fatal(err)
	}
	if n := hub.Subscribers("b"); n != 0 {
		t.Fatalf("b has %d subscribers after Unsubscribe and Resubscribe", n)
	}
	publish(t, &hub, "b", 1)
	publish(t, &hub, "a", 1)
	deadline := time.Now().Add(wait)
	for {
		mu.Lock()
		s := strings.Join(got, " ")
		mu.Unlock()
		if s == "a:1" {
			break
		}
		if s != "" || time.Now().After(deadline) {
			t.Fatalf("the application saw %q, want a:1", s)
		}
		time.Sleep(time.Millisecond)
	}
	if _, ok := f.Position("b"); ok {
		t.Fatal("Position of an unsubscribed topic")
	}
}

// TestFollowerFirstMessageAfterEmptyTopic pins that a Follower whose topic
// had no message (its reply said seq 0) takes a message of another epoch
// at seq 1 as the next one, live or held while its subscribe was in
// flight: nothing came before seq 1 of any epoch, and it saw nothing of
// its own. On the JetStream history a topic has no stream, and answers
// the epoch "none", until its first publish makes one: a newcomer's bot,
// already subscribed, reset there ("new epoch dna5k9, going on after seq
// 1") and never saw the room's first message.
func TestFollowerFirstMessageAfterEmptyTopic(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			rec := newRecorder()
			f := rec.follower()
			fmux := jsonrpc.NewMux()
			f.Register(fmux)
			handled := make(chan struct{}, 100)
			clientHandler := jsonrpc.HandlerFunc(func(ctx context.Context, req *jsonrpc.Request) (any, error) {
				res, err := fmux.ServeRPC(ctx, req)
				if req.Method == topic.MethodMessage {
					handled <- struct{}{}
				}
				return res, err
			})
			var server *jsonrpc.Peer
			live := func(seq uint64) {
				t.Helper()
				if err := server.Notify(testCtx(t), topic.MethodMessage, topic.Message{Topic: "t", Epoch: "E2", Seq: seq, Data: json.RawMessage(`null`)}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-handled:
				case <-time.After(wait):
					t.Fatal("the Follower did not handle a live message")
				}
			}
			var subscribes int
			smux := jsonrpc.NewMux()
			jsonrpc.Register(smux, topic.MethodSubscribe, func(ctx context.Context, p topic.SubscribeParams) (topic.SubscribeResult, error) {
				subscribes++
				if held && subscribes == 1 {
					live(1) // the stream's first message, before the reply
				}
				return topic.SubscribeResult{Topic: p.Topic, Epoch: "none", Seq: 0, Messages: []topic.Entry{}}, nil
			})
			a, b := jsonrpc.Pipe()
			server = jsonrpc.NewPeer(a, jsonrpc.Options{Handler: smux})
			client := jsonrpc.NewPeer(b, jsonrpc.Options{Handler: clientHandler})
			defer func() { client.Close(); server.Close(); client.Wait(); server.Wait() }()
			if err := f.Subscribe(testCtx(t), client, "t"); err != nil {
				t.Fatal(err)
			}
			if !held {
				live(1)
			}
			live(2)
			if got, want := strings.Join(rec.await(t, 3), " "), "reset none:0 E2:1 E2:2"; got != want {
				t.Errorf("the application saw %s, want %s", got, want)
			}
			if subscribes != 1 {
				t.Errorf("%d subscribes, want 1: the first message of a topic is no reason to start afresh", subscribes)
			}
			if pos, ok := f.Position("t"); !ok || pos != (topic.Position{Epoch: "E2", Seq: 2}) {
				t.Errorf("Position = %+v, %v; want E2:2", pos, ok)
			}
		})
	}
}
