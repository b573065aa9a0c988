package topic

import (
	"context"
	"encoding/json"
)

// A Store keeps the history of topics for a Hub: Memory (the default)
// keeps it in the process; the cluster module keeps it in JetStream, shared
// by every node.
type Store interface {
	// Open returns the log of the topic called name. The log calls
	// deliver with every message appended to it, whoever appended it (on
	// any node, for a shared store): once each, in seq order, one at a
	// time. deliver does not block. Open is called for a subscribe as for
	// a publish: a store that keeps its history elsewhere (JetStream)
	// creates nothing there until the first Append.
	Open(ctx context.Context, name string, deliver func(Position, json.RawMessage)) (Log, error)
}

// A Log is one topic's history.
type Log interface {
	// Append stores data (which the log may keep: the caller does not
	// change it afterwards) as the topic's next message and returns its
	// position.
	Append(ctx context.Context, data json.RawMessage) (Position, error)

	// Since returns the log's last position and, when since is of the
	// log's epoch and the history still holds every message after it,
	// the first of those messages (Recovered true): as many as fit in
	// limit, and at least one; More says that more follow the last of
	// them. Every message with a seq above the Last it returns is
	// delivered after Since was called: a subscriber added before it
	// misses nothing.
	Since(ctx context.Context, since *Position, limit Limit) (History, error)

	// Tail returns the log's last position and its last messages: at
	// most n (and limit.Messages), the newest that fit in limit.Bytes
	// (the newest one whatever its size), in seq order, with Recovered
	// and More false. As with Since, every message with a seq above the
	// Last it returns is delivered after Tail was called. n <= 0: no
	// message.
	Tail(ctx context.Context, n int, limit Limit) (History, error)

	// Idle reports whether closing the log now would lose nothing a
	// client could still recover: the Hub closes a log that has no
	// subscriber once it is idle. A Memory log is idle once it holds no
	// message (MaxAge empties it); a log whose history is kept elsewhere
	// always is. The Hub calls it with its lock held: it must not block.
	Idle() bool

	// Close stops the log's deliveries and frees what it holds.
	Close() error
}

// Limit bounds the messages one Log.Since returns: their data in bytes and
// their number; zero or negative: no bound. Since returns at least one
// message, whatever its size, so that a client always makes progress.
type Limit struct {
	Bytes    int
	Messages int
}

// History is what Log.Since returns.
type History struct {
	Last      Position // the epoch, and the seq of the last message (0: none)
	Recovered bool     // Messages are the first of every message after the since asked for
	Messages  []Entry  // in seq order; empty unless Recovered
	More      bool     // Recovered, and messages after the last of Messages remain: ask again since it
}
