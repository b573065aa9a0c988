package otel

import (
	"context"
	"errors"
	"strconv"
	"unicode/utf8"

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

// The caps of what a span keeps that the remote side chooses (the SDK's
// default SpanLimits leave attribute values whole, and do not apply to a
// status description): rpc.method_original and jsonrpc.request.id keep
// at most maxAttrBytes, the status description at most maxStatusBytes,
// each cut at a UTF-8 boundary and ended with cutMarker (counted in the
// cap).
const (
	maxAttrBytes   = 256
	maxStatusBytes = 1 << 10
	cutMarker      = "...[cut]"
)

// capped returns s if it is at most n bytes, else its first bytes, cut at
// a UTF-8 boundary, and cutMarker: n bytes at most in all.
func capped(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len(cutMarker)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + cutMarker
}

// knownCodes are the error codes metrics record as they are without
// Options.Codes: JSON-RPC 2.0's, and those the jsonrpc library answers
// with of its own. A fixed set, whatever the remote side sends.
var knownCodes = []int64{
	jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound,
	jsonrpc.CodeInvalidParams, jsonrpc.CodeInternalError,
	jsonrpc.CodeOverloaded, jsonrpc.CodeShuttingDown, jsonrpc.CodeRequestCancelled,
}

// metricCode returns code (a classify result) as metrics record it: as it
// is when it is empty, known or on Options.Codes, else "_OTHER".
func (t *Telemetry) metricCode(code string) string {
	if code == "" {
		return code
	}
	if _, ok := t.codes[code]; ok {
		return code
	}
	return other
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
