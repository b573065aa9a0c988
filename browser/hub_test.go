package browser_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/peerwire/jsonrpc"
)

// hub is a small, test-only server side of the topic protocol (TOPICS in
// the README: topic.subscribe, topic.unsubscribe, topic.message), written
// against the contract alone so that the client's recovery is tested
// against the rules and not against one implementation's habits. Each
// topic keeps its last historyLimit messages in memory.
type hub struct {
	mu     sync.Mutex
	topics map[string]*topicLog
}

const historyLimit = 8

// CodeNoSuchTopic answers a subscription to a topic the hub does not
// allow (any name beginning with "forbidden").
const CodeNoSuchTopic = -32001

type topicLog struct {
	epoch   string
	seq     int64
	history []logMsg // the last historyLimit messages, in seq order
	subs    map[*jsonrpc.Peer]bool
}

type logMsg struct {
	Seq  int64           `json:"seq"`
	Data json.RawMessage `json:"data"`
}

type position struct {
	Epoch string `json:"epoch"`
	Seq   int64  `json:"seq"`
}

type subscribeParams struct {
	Topic string    `json:"topic"`
	Since *position `json:"since"`
}

type subscribeResult struct {
	Topic     string   `json:"topic"`
	Epoch     string   `json:"epoch"`
	Seq       int64    `json:"seq"`
	Recovered bool     `json:"recovered"`
	Messages  []logMsg `json:"messages"`
}

type messageParams struct {
	Topic string          `json:"topic"`
	Epoch string          `json:"epoch"`
	Seq   int64           `json:"seq"`
	Data  json.RawMessage `json:"data"`
}

func newEpoch() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// log returns the topic's log, made on first use; h.mu held.
func (h *hub) log(name string) *topicLog {
	if h.topics == nil {
		h.topics = map[string]*topicLog{}
	}
	t := h.topics[name]
	if t == nil {
		t = &topicLog{epoch: newEpoch(), subs: map[*jsonrpc.Peer]bool{}}
		h.topics[name] = t
	}
	return t
}

// register adds topic.subscribe and topic.unsubscribe to m.
func (h *hub) register(m *jsonrpc.Mux) {
	jsonrpc.Register(m, "topic.subscribe", h.subscribe)
	jsonrpc.Register(m, "topic.unsubscribe", func(ctx context.Context, p subscribeParams) (bool, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.log(p.Topic).subs, jsonrpc.PeerFromContext(ctx))
		return true, nil
	})
}

// subscribe registers the caller and takes the history snapshot under one
// lock: every message published later reaches it live.
func (h *hub) subscribe(ctx context.Context, p subscribeParams) (subscribeResult, error) {
	if p.Topic == "" {
		return subscribeResult{}, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "topic is required", nil)
	}
	if len(p.Topic) >= 9 && p.Topic[:9] == "forbidden" {
		return subscribeResult{}, jsonrpc.NewError(CodeNoSuchTopic, "no such topic", map[string]string{"topic": p.Topic})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.log(p.Topic)
	t.subs[jsonrpc.PeerFromContext(ctx)] = true
	r := subscribeResult{Topic: p.Topic, Epoch: t.epoch, Seq: t.seq, Messages: []logMsg{}}
	if p.Since == nil || p.Since.Epoch != t.epoch || p.Since.Seq > t.seq {
		return r, nil
	}
	oldest := t.seq - int64(len(t.history)) + 1 // the first seq still held
	if p.Since.Seq+1 < oldest {
		return r, nil
	}
	r.Recovered = true
	for _, m := range t.history {
		if m.Seq > p.Since.Seq {
			r.Messages = append(r.Messages, m)
		}
	}
	return r, nil
}

// publish appends data to the topic and sends it to every subscriber,
// except if quiet: then it goes into the history only, as if its live
// notification were lost, which makes a gap at the subscribers.
func (h *hub) publish(topic string, data json.RawMessage, quiet bool) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.log(topic)
	t.seq++
	t.history = append(t.history, logMsg{Seq: t.seq, Data: data})
	if len(t.history) > historyLimit {
		t.history = t.history[1:]
	}
	if quiet {
		return t.seq
	}
	msg := messageParams{Topic: topic, Epoch: t.epoch, Seq: t.seq, Data: data}
	for p := range t.subs {
		// Under h.mu, so that each connection gets the topic in seq order;
		// a test hub: the Peer queues the notification and returns.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		p.Notify(ctx, "topic.message", msg)
		cancel()
	}
	return t.seq
}

// forget loses the topic's history: a new epoch from seq 0.
func (h *hub) forget(topic string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.log(topic)
	t.epoch, t.seq, t.history = newEpoch(), 0, nil
}

// leave drops p's subscriptions.
func (h *hub) leave(p *jsonrpc.Peer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.topics {
		delete(t.subs, p)
	}
}
