package topic_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peerwire/jsonrpc/topic"
)

func openMemory(t *testing.T, m *topic.Memory) topic.Log {
	t.Helper()
	l, err := m.Open(context.Background(), "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestMemoryAge: messages older than MaxAge are dropped, so a position
// before them is no longer recovered; younger ones still are.
func TestMemoryAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := openMemory(t, &topic.Memory{MaxAge: time.Minute})
		p1, _ := l.Append(ctx, json.RawMessage(`1`))
		time.Sleep(40 * time.Second)
		p2, _ := l.Append(ctx, json.RawMessage(`2`))
		start := topic.Position{Epoch: p1.Epoch}
		if h, _ := l.Since(ctx, &start, topic.Limit{}); !h.Recovered || len(h.Messages) != 2 {
			t.Fatalf("at 40 s: %+v, want both recovered", h)
		}
		time.Sleep(21 * time.Second) // message 1 is 61 s old
		if h, _ := l.Since(ctx, &start, topic.Limit{}); h.Recovered {
			t.Fatalf("at 61 s: %+v recovered from before an expired message", h)
		}
		if h, _ := l.Since(ctx, &p1, topic.Limit{}); !h.Recovered || len(h.Messages) != 1 || h.Messages[0].Seq != p2.Seq {
			t.Fatalf("at 61 s since seq 1: %+v, want seq 2", h)
		}
		time.Sleep(40 * time.Second)
		if h, _ := l.Since(ctx, &p1, topic.Limit{}); h.Recovered || h.Last != p2 {
			t.Fatalf("at 101 s: %+v, want nothing recovered, last %+v", h, p2)
		}
		if h, _ := l.Since(ctx, &p2, topic.Limit{}); !h.Recovered || len(h.Messages) != 0 {
			t.Fatalf("at 101 s since the last: %+v, want recovered, no messages", h)
		}
	})
}

// TestMemoryDefaults: the zero Memory keeps 5 minutes and 1 MiB.
func TestMemoryDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := openMemory(t, &topic.Memory{})
		data := json.RawMessage(`"` + string(make([]byte, 1000)) + `"`)
		for i := range data[1 : len(data)-1] {
			data[1+i] = 'x'
		}
		start := topic.Position{}
		for range 2000 { // 2000 × (1002 + 64) bytes: about 2 MiB
			p, _ := l.Append(ctx, data)
			start.Epoch = p.Epoch
		}
		h, _ := l.Since(ctx, &topic.Position{Epoch: start.Epoch, Seq: 1100}, topic.Limit{})
		if !h.Recovered || len(h.Messages) != 900 {
			t.Fatalf("the last 900 messages (0.9 MiB) not recovered: %v, %d", h.Recovered, len(h.Messages))
		}
		h, _ = l.Since(ctx, &topic.Position{Epoch: start.Epoch, Seq: 1000}, topic.Limit{})
		if h.Recovered {
			t.Fatal("1000 messages of 1066 bytes (1.02 MiB) recovered under a 1 MiB bound")
		}
		time.Sleep(topic.DefaultMaxAge + time.Second)
		if h, _ = l.Since(ctx, &topic.Position{Epoch: start.Epoch, Seq: 1999}, topic.Limit{}); h.Recovered {
			t.Fatal("a message older than DefaultMaxAge recovered")
		}
	})
}

// TestMemoryNoBounds: negative bounds keep everything.
func TestMemoryNoBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := openMemory(t, &topic.Memory{MaxBytes: -1, MaxAge: -1})
		var epoch string
		for range 3000 {
			p, _ := l.Append(ctx, json.RawMessage(`"some data to fill a kilobyte or so, not quite"`))
			epoch = p.Epoch
		}
		time.Sleep(time.Hour)
		if h, _ := l.Since(ctx, &topic.Position{Epoch: epoch}, topic.Limit{}); !h.Recovered || len(h.Messages) != 3000 {
			t.Fatalf("unbounded history lost messages: %v, %d", h.Recovered, len(h.Messages))
		}
	})
}
