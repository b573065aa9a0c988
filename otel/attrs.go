package otel

import (
	"context"
	"errors"
	"strconv"

	"github.com/peerwire/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
)

// The attribute keys of the conventions this package follows (see the
// package doc for their version).
const (
	keySystem          = attribute.Key("rpc.system.name")
	keyMethod          = attribute.Key("rpc.method")
	keyMethodOriginal  = attribute.Key("rpc.method_original")
	keyStatusCode      = attribute.Key("rpc.response.status_code")
	keyErrorType       = attribute.Key("error.type")
	keyRequestID       = attribute.Key("jsonrpc.request.id")
	keyProtocolVersion = attribute.Key("jsonrpc.protocol.version")
	keyServerAddress   = attribute.Key("server.address")
	keyServerPort      = attribute.Key("server.port")
	keyPeerAddress     = attribute.Key("network.peer.address")
	keyPeerPort        = attribute.Key("network.peer.port")
)

// other is the conventions' value for a method not on the allow-list and
// for an error of no known kind.
const other = "_OTHER"

var (
	attrSystem  = keySystem.String("jsonrpc")
	attrVersion = keyProtocolVersion.String("2.0")
)

// errorKinds are the error.type values of errors that carry no JSON-RPC
// code, in the order they are tested.
var errorKinds = []struct {
	err  error
	name string
}{
	{context.Canceled, "context.Canceled"},
	{context.DeadlineExceeded, "context.DeadlineExceeded"},
	{jsonrpc.ErrClosed, "jsonrpc.ErrClosed"},
	{jsonrpc.ErrOverloaded, "jsonrpc.ErrOverloaded"},
	{jsonrpc.ErrTooManyPending, "jsonrpc.ErrTooManyPending"},
	{jsonrpc.ErrSlowConsumer, "jsonrpc.ErrSlowConsumer"},
	{jsonrpc.ErrWriteTimeout, "jsonrpc.ErrWriteTimeout"},
	{jsonrpc.ErrMessageTooLarge, "jsonrpc.ErrMessageTooLarge"},
	{jsonrpc.ErrInvalidParams, "jsonrpc.ErrInvalidParams"},
	{jsonrpc.ErrInvalidResponse, "jsonrpc.ErrInvalidResponse"},
}

// classify returns the rpc.response.status_code (empty when there is none) and the
// error.type of err. Outbound, a code is one the remote side answered
// with. Inbound, it is the code the Peer answers with by default
// (jsonrpc.DefaultMapError): an Options.MapError of the Peer's own is not
// seen here.
func classify(err error, outbound bool) (code, kind string) {
	var e *jsonrpc.Error
	if outbound {
		if errors.As(err, &e) {
			c := strconv.FormatInt(e.Code, 10)
			return c, c
		}
	} else {
		c := strconv.FormatInt(jsonrpc.DefaultMapError(err).Code, 10)
		return c, c
	}
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return "", k.name
		}
	}
	return "", other
}
