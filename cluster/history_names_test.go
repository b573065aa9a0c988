package cluster_test

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peerwire/jsonrpc/cluster"
	"github.com/peerwire/jsonrpc/topic"
	"github.com/peerwire/jsonrpc/ws"
)

// TestHistoryAnyTopicName (issue 30, finding 15): ordinary names (a path,
// a backslash, 81 Cyrillic letters, 250 characters, dots and spaces, and
// names that differ only where one is escaped) each get a stream of their
// own on JetStream: two messages published on each are recovered from its
// history, and nothing of the others.
func TestHistoryAnyTopicName(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	s := newHubSite(t, ns.ClientURL(), cluster.HistoryOptions{})
	names := []string{"room/42", "room%2F42", `back\slash`, strings.Repeat("ж", 81), strings.Repeat("n", 250),
		"a.b c", "*", ">", "%", "%H", "with\ttab"}
	epochs := map[string]string{}
	for i, name := range names {
		for k := range 2 {
			pos, err := s.hub.Publish(testCtx(t, wait), name, fmt.Sprintf("%d-%d", i, k))
			if err != nil {
				t.Fatalf("Publish on %.30q: %v", name, err)
			}
			epochs[name] = pos.Epoch
		}
	}
	p, err := ws.Dial(testCtx(t, wait), s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i, name := range names {
		var res topic.SubscribeResult
		since := topic.Position{Epoch: epochs[name]}
		if err := p.Call(testCtx(t, wait), topic.MethodSubscribe, topic.SubscribeParams{Topic: name, Since: &since}, &res); err != nil {
			t.Fatalf("subscribe to %.30q: %v", name, err)
		}
		var got []string
		for _, e := range res.Messages {
			got = append(got, string(e.Data))
		}
		if want := fmt.Sprintf(`"%d-0" "%d-1"`, i, i); !res.Recovered || strings.Join(got, " ") != want {
			t.Fatalf("topic %.30q recovered %v: %v, want %s", name, res.Recovered, got, want)
		}
	}
}

// TestHistoryHashedNameChecked: a name too long to spell out in a stream
// name gets a SHA-256 of it, and the name kept in the stream's metadata;
// a stream of that hashed name that holds another topic (as a hash
// collision would) is refused, not mixed.
func TestHistoryHashedNameChecked(t *testing.T) {
	ns := startJetStream(t, -1, t.TempDir())
	nc := connect(t, ns.ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("n", 300)
	sum := sha256.Sum256([]byte(name))
	tok := "%H" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])
	if _, err := js.CreateStream(testCtx(t, wait), jetstream.StreamConfig{Name: "jsonrpc_history_" + tok,
		Subjects: []string{"jsonrpc.history." + tok}, Metadata: map[string]string{"jsonrpc.topic": "another topic"}}); err != nil {
		t.Fatal(err)
	}
	st, err := cluster.NewHistoryStore(nc)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := st.Open(context.Background(), name, nil); err == nil {
		l.Close()
		t.Fatal("a stream holding another topic was opened")
	} else if !strings.Contains(err.Error(), "another topic") {
		t.Fatalf("Open: %v", err)
	}
	if l, err := st.Open(context.Background(), strings.Repeat("m", 300), nil); err != nil {
		t.Fatalf("Open of another long name: %v", err)
	} else {
		l.Close()
	}
}
