package jsonrpc

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// The encoders below build messages by appending, so ids and already-raw
// params and results are copied once and never re-parsed.

// appendQuote appends s as a JSON string.
func appendQuote(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

func appendRequest(b []byte, id ID, method string, params json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0"`...)
	if !id.IsZero() {
		b = append(b, `,"id":`...)
		b = append(b, id.raw...)
	}
	b = append(b, `,"method":`...)
	b = appendQuote(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

func appendResult(b []byte, id ID, result json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.raw...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

func appendErrorResponse(b []byte, id ID, e *Error) []byte {
	if id.IsZero() {
		id = NullID()
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.raw...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, e.Code, 10)
	b = append(b, `,"message":`...)
	b = appendQuote(b, e.Message)
	if len(e.Data) > 0 && json.Valid(e.Data) {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	return append(b, "}}"...)
}

// marshalParams encodes params for the wire: nil is omitted, anything else
// must encode to an object or array.
func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: failed to marshal params: %w", err)
	}
	if raw[0] != '{' && raw[0] != '[' {
		if string(raw) == "null" { // a nil map, slice or pointer
			return nil, nil
		}
		return nil, fmt.Errorf("%w, got %.20s", ErrInvalidParams, raw)
	}
	return raw, nil
}

// marshalResult encodes a handler's result; nil becomes null.
func marshalResult(result any) (json.RawMessage, error) {
	if result == nil {
		return json.RawMessage("null"), nil
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: failed to marshal result: %w", err)
	}
	return raw, nil
}
