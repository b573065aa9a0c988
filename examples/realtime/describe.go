package main

import (
	"encoding/json"
	"io"
	"reflect"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/openrpc"
	"github.com/peerwire/jsonrpc/schema"
	"github.com/peerwire/jsonrpc/topic"
)

//go:generate sh -c "go run . -openrpc > static/openrpc.json"
//go:generate go run github.com/peerwire/jsonrpc/openrpc/jsonrpc-ts -in static/openrpc.json -client ./js/jsonrpc.js -out static/api.d.ts

// info is what the board's OpenRPC document says of it.
var info = openrpc.Info{
	Title:       "sticky board",
	Version:     "1",
	Description: "The realtime demo's board: notes, likes and the news of them, on every node of a cluster.",
}

// describe says what the board's Mux serves and what the board sends, for
// its OpenRPC document, which it serves as rpc.discover, and the page's
// types (static/api.d.ts, made from static/openrpc.json by go generate;
// TestPageTypes checks both are current and type-checks app.js).
func describe(m *jsonrpc.Mux) {
	m.Describe("board.list", jsonrpc.Description{Summary: "All notes, oldest first."})
	m.Describe("board.stats", jsonrpc.Description{Summary: "The board's summary."})
	m.Describe("board.post", jsonrpc.Description{Summary: "Posts a note signed by the session's user.",
		Errors: []jsonrpc.ErrorInfo{{Code: CodeBadText, Message: "note text must be 1..140 characters", Data: reflect.TypeFor[map[string]int]()}}})
	m.Describe("board.like", jsonrpc.Description{Summary: "Likes a note (once per person), or with unlike takes the like back.",
		Errors: []jsonrpc.ErrorInfo{{Code: CodeNoSuchID, Message: "no such note", Data: reflect.TypeFor[map[string]int64]()}}})
	m.Describe("board.clear", jsonrpc.Description{Summary: "Clears the board, once the page confirms (page.confirm).",
		Errors: []jsonrpc.ErrorInfo{{Code: CodeNotConfirmed, Message: "not confirmed"}}})
	m.Describe("board.nudge", jsonrpc.Description{Summary: "Nudges a user: calls page.nudge on one of their pages, on any node.",
		Errors: []jsonrpc.ErrorInfo{{Code: CodeNotOnline, Message: "nobody of that name is online", Data: reflect.TypeFor[map[string]string]()}}})
	jsonrpc.DescribeCall[topic.SubscribeParams, topic.SubscribeResult](m, topic.MethodSubscribe,
		jsonrpc.Description{Summary: "Follows the topic \"board\" (package topic's protocol)."})
	jsonrpc.DescribeCall[topic.UnsubscribeParams, bool](m, topic.MethodUnsubscribe,
		jsonrpc.Description{Summary: "Stops following the topic."})
	jsonrpc.DescribeSent[Note](m, "board.posted", jsonrpc.Description{Summary: "A note was posted."})
	jsonrpc.DescribeSent[Liked](m, "board.liked", jsonrpc.Description{Summary: "A like was given or taken back."})
	jsonrpc.DescribeSent[ClearedBy](m, "board.cleared", jsonrpc.Description{Summary: "The board was cleared."})
	jsonrpc.DescribeSent[Stats](m, "board.stats", jsonrpc.Description{Summary: "The board's summary changed."})
	jsonrpc.DescribeTopic[news](m, boardTopic, jsonrpc.Description{
		Summary: "The board's news, each {method, params} of the plain notification it stands for."})
	openrpc.Serve(m, info)
}

// newsKinds are the plain notifications a message of the topic "board"
// stands for, with the type of their params.
var newsKinds = []struct {
	method string
	params reflect.Type
}{
	{"board.posted", reflect.TypeFor[Note]()},
	{"board.liked", reflect.TypeFor[Liked]()},
	{"board.cleared", reflect.TypeFor[ClearedBy]()},
	{"board.stats", reflect.TypeFor[Stats]()},
}

// DefineSchema says a message of the topic is one of newsKinds: its
// method, and params of that method's type.
func (news) DefineSchema(g *schema.Generator) (schema.Schema, error) {
	var alts []any
	for _, k := range newsKinds {
		params, err := g.Schema(k.params)
		if err != nil {
			return nil, err
		}
		alts = append(alts, schema.Schema{
			"type":                 "object",
			"properties":           schema.Schema{"method": schema.Schema{"const": k.method}, "params": params},
			"required":             []any{"method", "params"},
			"additionalProperties": false,
		})
	}
	return schema.Schema{"anyOf": alts}, nil
}

// printDocument writes the board's OpenRPC document, indented, to w: what
// rpc.discover answers, made without a board behind the methods.
func printDocument(w io.Writer) error {
	doc, err := openrpc.New((&Board{topics: &topic.Hub{}}).Mux(), info)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
