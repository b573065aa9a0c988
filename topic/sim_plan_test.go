package topic_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// The plan of a topic simulation run (sim_test.go): every random choice,
// drawn from the run's seed before it starts, so that a seed replays the
// same operations and parameters.

// tsimOpKind is what one step of a plan does.
type tsimOpKind int

const (
	tsPublish     tsimOpKind = iota // n messages on a topic
	tsSubscribe                     // a client's Follower.Subscribe
	tsUnsubscribe                   // a client's Follower.Unsubscribe
	tsDrop                          // a client's connection ends, from its side or the server's
	tsReconnect                     // a client that is down connects again and Resubscribes
	tsEpoch                         // a topic's log starts a new epoch under the Hub (a stream made again)
	tsSlowBurst                     // a client's next message blocks it while a burst is published
	tsSleep                         // time passes (histories age out, quiet topics are released)
	tsRevoke                        // Allow stops (or starts again) letting a topic through
	tsKinds
)

var tsimKindNames = [tsKinds]string{"publish", "subscribe", "unsubscribe", "drop", "reconnect", "epoch", "slow-burst", "sleep", "revoke"}

func (k tsimOpKind) String() string { return tsimKindNames[k] }

// tsimOp is one step.
type tsimOp struct {
	kind   tsimOpKind
	client int
	topic  int
	n      int           // publish, slow-burst: messages
	d      time.Duration // sleep; slow-burst: how long the client is blocked
	async  bool          // subscribe, unsubscribe: not waited for (it may overlap the next steps)
	server bool          // drop: the server ends the connection
}

func (o tsimOp) String() string {
	switch o.kind {
	case tsPublish:
		return fmt.Sprintf("publish %d on t%d", o.n, o.topic)
	case tsSubscribe, tsUnsubscribe:
		a := ""
		if o.async {
			a = " (async)"
		}
		return fmt.Sprintf("client %d %v t%d%s", o.client, o.kind, o.topic, a)
	case tsDrop:
		by := "client"
		if o.server {
			by = "server"
		}
		return fmt.Sprintf("client %d dropped by the %s", o.client, by)
	case tsReconnect:
		return fmt.Sprintf("client %d reconnects", o.client)
	case tsEpoch:
		return fmt.Sprintf("t%d starts a new epoch", o.topic)
	case tsSlowBurst:
		return fmt.Sprintf("client %d blocked %v while %d are published on t%d", o.client, o.d, o.n, o.topic)
	case tsSleep:
		return fmt.Sprintf("sleep %v", o.d)
	case tsRevoke:
		return fmt.Sprintf("t%d allowed or not, flipped", o.topic)
	}
	return o.kind.String()
}

// tsimPlan is a whole run.
type tsimPlan struct {
	seed        uint64
	topics      int
	clients     int
	maxQueue    int           // Hub.MaxQueue
	replyMsgs   int           // Hub.MaxReplyMessages (0: the default)
	maxBytes    int           // Memory.MaxBytes (0: the default)
	maxAge      time.Duration // Memory.MaxAge (0: the default)
	connTopics  int           // Hub.MaxConnTopics (0: the default)
	maxTopics   int           // Hub.MaxTopics (0: the default)
	maxBuffered int           // Follower.MaxBuffered (0: the default)
	history     int           // Follower.History (0: no backlog)
	ops         []tsimOp
}

func (p *tsimPlan) String() string {
	return fmt.Sprintf("%d topics, %d clients, MaxQueue %d, MaxReplyMessages %d, MaxBytes %d, MaxAge %v, MaxConnTopics %d, MaxTopics %d, MaxBuffered %d, History %d, %d steps",
		p.topics, p.clients, p.maxQueue, p.replyMsgs, p.maxBytes, p.maxAge, p.connTopics, p.maxTopics, p.maxBuffered, p.history, len(p.ops))
}

func (p *tsimPlan) describe() string {
	var b strings.Builder
	fmt.Fprintln(&b, p)
	for i, o := range p.ops {
		fmt.Fprintf(&b, "\t%3d %v\n", i, o)
	}
	return b.String()
}

// tsimGenerate draws the plan of seed.
func tsimGenerate(seed uint64) *tsimPlan {
	r := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	between := func(lo, hi int) int { return lo + r.IntN(hi-lo+1) }
	chance := func(pct int) bool { return r.IntN(100) < pct }
	p := &tsimPlan{seed: seed, topics: between(1, 4), clients: between(1, 4), maxQueue: 256}
	if chance(40) {
		p.maxQueue = between(2, 16)
	}
	if chance(50) {
		p.replyMsgs = between(1, 8)
	}
	if chance(30) {
		p.maxBytes = between(4, 40) * (64 + 16) // a few messages of history
	}
	if chance(30) {
		p.maxAge = time.Duration(between(1, 30)) * time.Second
	}
	if chance(20) {
		p.connTopics = between(1, p.topics)
	}
	if chance(15) {
		p.maxTopics = between(1, p.topics)
	}
	if chance(30) {
		p.maxBuffered = between(1, 8)
	}
	weights := [tsKinds]int{tsPublish: 34, tsSubscribe: 16, tsUnsubscribe: 7, tsDrop: 8, tsReconnect: 14, tsEpoch: 3, tsSlowBurst: 5, tsSleep: 9, tsRevoke: 4}
	total := 0
	for _, w := range weights {
		total += w
	}
	for range between(30, 150) {
		x, kind := r.IntN(total), tsimOpKind(0)
		for ; x >= weights[kind]; kind++ {
			x -= weights[kind]
		}
		o := tsimOp{kind: kind, client: r.IntN(p.clients), topic: r.IntN(p.topics)}
		switch kind {
		case tsPublish:
			o.n = between(1, 12)
		case tsSubscribe, tsUnsubscribe:
			o.async = chance(25)
		case tsDrop:
			o.server = chance(50)
		case tsSlowBurst:
			o.n = between(1, 40)
			o.d = time.Duration(between(1, 500)) * time.Millisecond
		case tsSleep:
			if chance(20) {
				o.d = time.Duration(between(61, 400)) * time.Second // past the Hub's grace
			} else {
				o.d = time.Duration(between(1, 3000)) * time.Millisecond
			}
		}
		p.ops = append(p.ops, o)
	}
	// Drawn after the steps, so that a seed's steps are what they were
	// before History was drawn.
	if chance(50) {
		p.history = between(1, 20)
	}
	return p
}
