package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Error codes defined by the JSON-RPC 2.0 specification, section 5.1.
const (
	CodeParseError     = -32700 // invalid JSON was received
	CodeInvalidRequest = -32600 // the JSON sent is not a valid Request object
	CodeMethodNotFound = -32601 // the method does not exist or is not available
	CodeInvalidParams  = -32602 // invalid method parameters
	CodeInternalError  = -32603 // internal JSON-RPC error
)

// Codes this package uses from the ranges the specification and LSP leave to
// implementations.
const (
	// CodeOverloaded answers a call that arrived while the Peer's inbound
	// queue was full (see Options.MaxQueued). It is in the specification's
	// -32000..-32099 range for implementation-defined server errors.
	CodeOverloaded = -32000

	// CodeShuttingDown answers a call that arrived after Shutdown began.
	// (Not -32002, which LSP uses for ServerNotInitialized.)
	CodeShuttingDown = -32003

	// CodeRequestCancelled answers a call whose handler returned a context
	// cancellation error, as LSP defines it for $/cancelRequest.
	CodeRequestCancelled = -32800
)

// Error is a JSON-RPC error object. It is both a Go error and the value that
// goes over the wire: a handler that returns an *Error sends exactly it, and
// a Call whose reply carries an error object returns it as an *Error.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`

	// method is, for an error the other side answered one of this Peer's
	// calls with, the method called (see fromCall); "" for any other.
	method string
}

// fromCall returns a copy of e, the other side's answer to a call of
// method, that says so (see DefaultMapError).
func fromCall(e *Error, method string) *Error {
	c := *e
	c.method = method
	return &c
}

// NewError returns an *Error with the given code and message and with data,
// if not nil, marshalled as its data member. If data cannot be marshalled,
// the error's Data is left empty.
func NewError(code int64, message string, data any) *Error {
	e := &Error{Code: code, Message: message}
	if data != nil {
		if raw, err := marshalJSON(data); err == nil {
			e.Data = raw
		}
	}
	return e
}

// Error implements the error interface. The text of an error that a Call
// or Batch returned, the other side's answer, names the method called.
func (e *Error) Error() string {
	prefix := "jsonrpc: "
	if e.method != "" {
		prefix = "jsonrpc: " + e.method + ": "
	}
	if len(e.Data) == 0 {
		return fmt.Sprintf("%scode %d: %s", prefix, e.Code, e.Message)
	}
	return fmt.Sprintf("%scode %d: %s: %s", prefix, e.Code, e.Message, e.Data)
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && e != nil && t.Code == e.Code
}

// Sentinel errors. Errors returned by a Peer wrap these, so test with
// errors.Is.
var (
	// ErrClosed is wrapped by every error a Peer returns because its
	// connection has ended; the error also wraps the cause of the end.
	ErrClosed = errors.New("jsonrpc: connection closed")

	// ErrWriteTimeout is wrapped by the cause of a connection that ended
	// because a write took longer than Options.WriteTimeout; the cause
	// also wraps context.DeadlineExceeded.
	ErrWriteTimeout = errors.New("jsonrpc: write timed out: the remote side is not reading")

	// ErrTooManyPending is returned by Call and Batch when
	// Options.MaxPending calls are already waiting for their replies.
	ErrTooManyPending = errors.New("jsonrpc: too many calls waiting for replies")

	// ErrReservedMethod is wrapped by the value Mux.Handle panics with for
	// a method whose name begins with "rpc.", which the specification
	// reserves.
	ErrReservedMethod = errors.New("jsonrpc: method names beginning with \"rpc.\" are reserved")

	// ErrInvalidResponse is wrapped by the error a call fails with when
	// the reply that arrived for it is not a valid JSON-RPC 2.0 response
	// (see InvalidResponseError).
	ErrInvalidResponse = errors.New("jsonrpc: invalid response")

	// ErrOverloaded is wrapped by the cause of a connection that ended
	// because the remote side sent more notifications than
	// Options.MaxQueued and Options.MaxQueuedBytes allow, at a time when
	// pushing back (not reading) could have deadlocked the two sides: a
	// reply or a write of this side's was still awaited.
	ErrOverloaded = errors.New("jsonrpc: inbound work over its budget")

	// ErrInvalidParams is wrapped by the error Call, Notify and Batch
	// return when params do not marshal to what the call can send: a JSON
	// object or array (or, with progress, an object).
	ErrInvalidParams = errors.New("jsonrpc: invalid params")

	// ErrNoProgressDialect is wrapped by the error a Call made with a ctx
	// from WithProgress or WithPartialResults returns, at once and with
	// nothing sent, when the Peer has no Options.Progress: its function
	// would never be called.
	ErrNoProgressDialect = errors.New("jsonrpc: WithProgress or WithPartialResults on a Peer with no Options.Progress (set jsonrpc.LSPProgress, jsonrpc.MCPProgress or a dialect of your own)")

	// ErrNilContext is returned by Call, Notify and Batch when given a nil
	// ctx: pass context.Background(), or better a ctx with a deadline.
	ErrNilContext = errors.New("jsonrpc: nil ctx: pass context.Background() or a ctx with a deadline")

	// ErrBatchTooLarge is wrapped by the error Batch fails with, at once
	// and with nothing sent, for a batch longer than Options.MaxBatch: a
	// remote side configured alike would refuse it whole with one error
	// that names no call.
	ErrBatchTooLarge = errors.New("jsonrpc: batch longer than MaxBatch")
)

// predefined errors, built once.
func errParse() *Error          { return &Error{Code: CodeParseError, Message: "Parse error"} }
func errInvalidRequest() *Error { return &Error{Code: CodeInvalidRequest, Message: "Invalid Request"} }
func errMethodNotFound() *Error { return &Error{Code: CodeMethodNotFound, Message: "Method not found"} }
func errInternal() *Error       { return &Error{Code: CodeInternalError, Message: "Internal error"} }

// errInvalidParams returns a -32602 error whose data explains the problem.
func errInvalidParams(why error) *Error {
	e := &Error{Code: CodeInvalidParams, Message: "Invalid params"}
	if why != nil {
		e.Data = appendQuote(nil, why.Error())
	}
	return e
}

// DefaultMapError is the mapping a Peer applies to a handler's error when
// Options.MapError is nil. An *Error anywhere in the chain goes out as is,
// unless it is an error that a Call or Batch of the handler's returned: the
// other side's answer to the handler's own call, which is the handler's
// failure, not an answer to the call it serves (a callback's "Method not
// found" must not say that the method served does not exist). A handler
// that means to forward such an error returns an *Error of its own with
// its fields. A context cancellation becomes CodeRequestCancelled; any
// other error becomes a bare -32603 Internal error, so internal error text
// never leaks to the remote. Use it from a custom mapping to keep these
// rules for the errors the custom mapping does not handle.
func DefaultMapError(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e) && e.method == "":
		return e
	case errors.Is(err, context.Canceled):
		return &Error{Code: CodeRequestCancelled, Message: "Request cancelled"}
	default:
		return errInternal()
	}
}

// Forward returns what a handler returns to answer with the error that
// the other side answered one of its own calls with, as is: the *Error in
// err's chain, which DefaultMapError then sends as it came (it sends a
// bare Internal error for such an error returned any other way). An err
// with no *Error in its chain is returned unchanged.
//
//	if err := peer.Call(ctx, "host.readFile", p, &f); err != nil {
//		return nil, jsonrpc.Forward(err) // the host's refusal, as the host said it
//	}
func Forward(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.method = ""
	return &c
}

// InvalidResponseError is the error a call fails with when the reply that
// arrived for its id is not a valid response (no "jsonrpc": "2.0", both or
// neither of result and error, an error whose code is not an integer...).
// It wraps ErrInvalidResponse.
type InvalidResponseError struct {
	// Reason says what is wrong with the reply.
	Reason string
	// Received is the reply as it arrived, cut to its first 1 KiB.
	Received []byte
}

// maxReceived bounds the reply text an InvalidResponseError keeps.
const maxReceived = 1 << 10

func newInvalidResponse(why string, received []byte) *InvalidResponseError {
	return &InvalidResponseError{Reason: why, Received: bytes.Clone(received[:min(len(received), maxReceived)])}
}

// Error implements the error interface.
func (e *InvalidResponseError) Error() string {
	return fmt.Sprintf("jsonrpc: invalid response: %s: %s", e.Reason, e.Received)
}

// Unwrap returns ErrInvalidResponse.
func (e *InvalidResponseError) Unwrap() error { return ErrInvalidResponse }

// closedError is the error of a Peer whose connection has ended: it wraps
// ErrClosed and the cause, and reads as fmt.Errorf("%w: %w", ErrClosed,
// cause) does. It is one allocation where that is eight, and its text is
// made only when asked for: every Peer ends, and httprpc makes two for
// every plain POST.
type closedError struct{ cause error }

// closedBy returns the error of a Peer whose connection ended for cause.
func closedBy(cause error) error { return &closedError{cause} }

func (e *closedError) Error() string {
	if e.cause == nil {
		return ErrClosed.Error() + ": %!w(<nil>)" // as fmt.Errorf writes it
	}
	return ErrClosed.Error() + ": " + e.cause.Error()
}

func (e *closedError) Unwrap() []error { return []error{ErrClosed, e.cause} }
