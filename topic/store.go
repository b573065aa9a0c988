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
	// time. deliver does not block.
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
	// those messages (Recovered true). Every message with a seq above the
	// Last it returns is delivered after Since was called: a subscriber
	// added before it misses nothing.
	Since(ctx context.Context, since *Position) (History, error)

	// Close stops the log's deliveries and frees what it holds.
	Close() error
}

// History is what Log.Since returns.
type History struct {
	Last      Position // the epoch, and the seq of the last message (0: none)
	Recovered bool     // Messages hold every message after the since asked for
	Messages  []Entry  // in seq order; empty unless Recovered
}
