package topic

import (
	"encoding/json"
	"errors"

	"github.com/peerwire/jsonrpc"
)

// The methods of the topic protocol.
const (
	// MethodSubscribe is the call a client makes to follow a topic, with
	// SubscribeParams; the result is a SubscribeResult.
	MethodSubscribe = "topic.subscribe"
	// MethodUnsubscribe is the call a client makes to stop following a
	// topic, with UnsubscribeParams; the result is true.
	MethodUnsubscribe = "topic.unsubscribe"
	// MethodMessage is the notification the server sends for every live
	// message, with a Message as its params.
	MethodMessage = "topic.message"
	// MethodKicked is the notification the server sends to a subscriber
	// it removed from a topic (Hub.Kick), with KickedParams: the client
	// stops following the topic, and does not subscribe to it again by
	// itself.
	MethodKicked = "topic.kicked"
)

// CodeNoSuchTopic is the code of the error a subscribe gets for a topic
// that the Hub does not allow (Hub.Allow): -32001, message "no such topic".
const CodeNoSuchTopic = -32001

// CodeTooManyTopics is the code of the error a subscribe gets when its
// connection already follows Hub.MaxConnTopics topics: -32004, message
// "too many topics on this connection". It does not change by trying
// again: unsubscribe from another topic first.
const CodeTooManyTopics = -32004

var (
	// ErrKicked is wrapped by the error a Follower's OnError gets when the
	// server removed it from a topic (topic.kicked); the error's text has
	// the server's reason.
	ErrKicked = errors.New("topic: removed from the topic by the server")

	// ErrNoIdentity is returned by Hub.KickIdentity on a Hub without
	// Identity: it cannot tell whose a connection is.
	ErrNoIdentity = errors.New("topic: the Hub has no Identity")

	// ErrNoSuchTopic is the error a topic.subscribe gets when Hub.Allow
	// refuses the topic with an error that is not a *jsonrpc.Error.
	ErrNoSuchTopic = jsonrpc.NewError(CodeNoSuchTopic, "no such topic", nil)

	// ErrClosed is returned by a Hub's Publish after its Close.
	ErrClosed = errors.New("topic: hub closed")

	// ErrTooManyTopics is wrapped by the error of a Publish that would
	// open a topic beyond Hub.MaxTopics while every open topic is in use;
	// a subscribe gets jsonrpc.CodeOverloaded then.
	ErrTooManyTopics = errors.New("topic: too many topics open")

	// ErrNotRegistered is wrapped by the error of a Follower's Subscribe
	// and Resubscribe when the Follower's handlers are not where the
	// connection's messages go: call Follower.Register on the Mux that
	// serves the connection (its jsonrpc.Options.Handler).
	ErrNotRegistered = errors.New("topic: the Follower is not registered on the Mux that serves the connection")
)

// Position is a place in a topic's stream: the epoch of its history and
// the seq of the last message there. Seqs start at 1 in every epoch and
// grow by one per message; an epoch changes whenever the history was lost
// (a new process, a new stream), and a position of another epoch cannot be
// recovered from.
type Position struct {
	Epoch string `json:"epoch"`
	Seq   uint64 `json:"seq"`
}

// Entry is one message of a topic's history, as a subscribe reply carries it.
type Entry struct {
	Seq  uint64          `json:"seq"`
	Data json.RawMessage `json:"data"`
}

// SubscribeParams are the params of topic.subscribe. Since, when set, asks
// for every message after it. History, when positive, asks for the
// topic's last History messages when there is no Since or Since cannot be
// recovered (another epoch, a history that no longer reaches back): the
// reply is then not recovered and its Messages are the newest of the
// history, at most History and what one reply may carry, ending at its
// Seq. Negative: refused with jsonrpc.CodeInvalidParams.
type SubscribeParams struct {
	Topic   string    `json:"topic"`
	Since   *Position `json:"since,omitempty"`
	History int       `json:"history,omitempty"`
}

// SubscribeResult is the result of topic.subscribe: the topic's epoch,
// the seq the reply brings the client to (the topic's last, 0 if none; or
// with More, the seq of the last of Messages), whether the messages after
// Since were recovered, and those messages, in seq order (never null on
// the wire). Not recovered, Messages are the backlog the params' History
// asked for (none without it): the newest messages, with no gap, the last
// at Seq; fewer than History when the history holds fewer or the reply's
// bounds cut the oldest. More says that the history holds more than one reply may
// carry (Hub.MaxReplyBytes, Hub.MaxReplyMessages): the client subscribes
// again with since at Seq for the next of them.
type SubscribeResult struct {
	Topic     string  `json:"topic"`
	Epoch     string  `json:"epoch"`
	Seq       uint64  `json:"seq"`
	Recovered bool    `json:"recovered"`
	Messages  []Entry `json:"messages"`
	More      bool    `json:"more,omitempty"`
}

// KickedParams are the params of topic.kicked: the topic, and the
// server's reason, for the application.
type KickedParams struct {
	Topic  string `json:"topic"`
	Reason string `json:"reason,omitempty"`
}

// UnsubscribeParams are the params of topic.unsubscribe.
type UnsubscribeParams struct {
	Topic string `json:"topic"`
}

// Message is one live message: the params of the topic.message
// notification, and what a Follower hands to its OnMessage.
type Message struct {
	Topic string          `json:"topic"`
	Epoch string          `json:"epoch"`
	Seq   uint64          `json:"seq"`
	Data  json.RawMessage `json:"data"`
}
