// Package openrpc describes a jsonrpc.Mux as an OpenRPC 1.3 document: its
// methods with the JSON Schemas of their params and results (package
// schema), their errors, and what the Mux's side sends, and serves it as
// rpc.discover when asked to (Serve).
//
// OpenRPC describes the methods a server serves. What the server sends
// unasked is described by extensions of the document, a convention of
// this library:
//
//   - x-notifications, at the top: the notifications the server sends
//     (jsonrpc.DescribeSent), each a method object without result whose
//     x-params is the schema of the params as sent (the Go value as it
//     marshals);
//   - x-topics, at the top: the topics it publishes (jsonrpc.DescribeTopic),
//     each {name, summary, description, notification: "topic.message",
//     message: the schema of a message's data};
//   - x-params, on a method whose params are no fixed list (a slice, a map,
//     any: its params list is then empty), and on every sent notification:
//     the schema of the params member as a whole;
//   - x-error-data, on a method: the schemas of its errors' data, by code
//     (an OpenRPC error object admits no extension);
//   - x-untyped: true, on a method registered with Handle and not given
//     types: its params (x-params) and result are {}, never guessed.
//
// Definitions of named struct types are in components.schemas. Document
// builds the document; TestDocument pins it for a test Mux and
// TestDiscover serves it.
package openrpc
