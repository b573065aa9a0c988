package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// The encoders below build messages by appending, so ids and already-raw
// params and results are copied once and never re-parsed.

// appendQuote appends s as a JSON string.
func appendQuote(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := marshalJSON(s) // escapes, and mends invalid UTF-8
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// envelopeSize is room for an envelope's fixed text, so that a message is
// built in one allocation.
const envelopeSize = 64

// newMessage returns a buffer for a message of about n variable bytes, or b
// itself when b is not nil (a batch being built).
func newMessage(b []byte, n int) []byte {
	if b != nil {
		return b
	}
	return make([]byte, 0, envelopeSize+n)
}

func appendRequest(b []byte, id ID, method string, params json.RawMessage) []byte {
	b = newMessage(b, len(id.raw)+len(method)+len(params))
	b = appendRequestHead(b, id, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// appendRequestHead appends a request up to its params.
func appendRequestHead(b []byte, id ID, method string) []byte {
	b = append(b, `{"jsonrpc":"2.0"`...)
	if !id.IsZero() {
		b = append(b, `,"id":`...)
		b = append(b, id.raw...)
	}
	b = append(b, `,"method":`...)
	return appendQuote(b, method)
}

// msgBuf is a pooled buffer that an outgoing message is encoded into,
// params or result included, so that a message costs neither an
// allocation nor a copy once the pool is warm. The sendQueue gives it back
// once the message is written (Conn.Write does not retain its argument).
type msgBuf struct{ b []byte }

var msgBufs = sync.Pool{New: func() any { return &msgBuf{b: make([]byte, 0, 512)} }}

// maxPooledMsg bounds the buffers kept for reuse; larger ones are left to
// the garbage collector.
const maxPooledMsg = 1 << 20

func newMsgBuf() *msgBuf {
	mb := msgBufs.Get().(*msgBuf)
	mb.b = mb.b[:0]
	return mb
}

// free gives mb back to the pool; nothing may use it afterwards.
func (mb *msgBuf) free() {
	if cap(mb.b) <= maxPooledMsg {
		msgBufs.Put(mb)
	}
}

// encodeRequest encodes a request (a notification for the zero id), its
// params marshalled in place, as marshalParams would marshal them.
func encodeRequest(id ID, method string, params any) (*msgBuf, error) {
	mb := newMsgBuf()
	b, err := appendParams(appendRequestHead(mb.b, id, method), params)
	if err != nil {
		mb.free()
		return nil, err
	}
	mb.b = append(b, '}')
	return mb, nil
}

// encodeResult encodes a successful reply, its result marshalled in place,
// as marshalResult would marshal it.
func encodeResult(id ID, result any) (*msgBuf, error) {
	mb := newMsgBuf()
	b := append(mb.b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.raw...)
	b = append(b, `,"result":`...)
	var err error
	switch r := result.(type) {
	case nil:
		b = append(b, "null"...)
	case json.RawMessage:
		var raw json.RawMessage
		if raw, err = marshalResult(r); err == nil {
			b = append(b, raw...)
		}
	default:
		if b, err = appendJSON(b, result); err != nil {
			err = fmt.Errorf("jsonrpc: failed to marshal result: %w", err)
		}
	}
	if err != nil {
		mb.free()
		return nil, err
	}
	mb.b = append(b, '}')
	return mb, nil
}

// appendParams appends `,"params":` and params, marshalled in place, or
// nothing for params that marshalParams would omit; it fails where
// marshalParams fails.
func appendParams(b []byte, params any) ([]byte, error) {
	if params == nil {
		return b, nil
	}
	if raw, ok := params.(json.RawMessage); ok {
		raw, err := marshalParams(raw)
		if err != nil || raw == nil {
			return b, err
		}
		return append(append(b, `,"params":`...), raw...), nil
	}
	n := len(b)
	b = append(b, `,"params":`...)
	start := len(b)
	b, err := appendJSON(b, params)
	if err != nil {
		return b[:n], fmt.Errorf("jsonrpc: failed to marshal params: %w", err)
	}
	if c := b[start]; c == '{' || c == '[' {
		return b, nil
	}
	if string(b[start:]) == "null" { // a nil map, slice or pointer
		return b[:n], nil
	}
	return b[:n], fmt.Errorf("%w: params must be a JSON object or array, got %.20s", ErrInvalidParams, b[start:])
}

func appendErrorResponse(b []byte, id ID, e *Error) []byte {
	if id.IsZero() {
		id = NullID()
	}
	b = newMessage(b, len(id.raw)+len(e.Message)+len(e.Data))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.raw...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, e.Code, 10)
	b = append(b, `,"message":`...)
	b = appendQuote(b, e.Message)
	if len(e.Data) > 0 && validJSON(e.Data) {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	return append(b, "}}"...)
}

// marshalParams encodes params for the wire: nil is omitted, anything else
// must encode to an object or array. A valid json.RawMessage goes as is.
func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	if raw, ok := params.(json.RawMessage); ok && raw != nil {
		if t := trimSpace(raw); len(t) > 0 && (t[0] == '{' || t[0] == '[') && validJSON(t) {
			return t, nil // sent as is
		}
		return nil, fmt.Errorf("%w: params must be a JSON object or array, got %.20q", ErrInvalidParams, raw)
	}
	raw, err := marshalJSON(params)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: failed to marshal params: %w", err)
	}
	if raw[0] != '{' && raw[0] != '[' {
		if string(raw) == "null" { // a nil map, slice or pointer
			return nil, nil
		}
		return nil, fmt.Errorf("%w: params must be a JSON object or array, got %.20s", ErrInvalidParams, raw)
	}
	return raw, nil
}

// marshalResult encodes a handler's result; nil becomes null and a valid
// json.RawMessage goes as is.
func marshalResult(result any) (json.RawMessage, error) {
	if result == nil {
		return json.RawMessage("null"), nil
	}
	if raw, ok := result.(json.RawMessage); ok {
		if raw == nil {
			return json.RawMessage("null"), nil
		}
		if !validJSON(raw) {
			return nil, errors.New("jsonrpc: result is a json.RawMessage that is not valid JSON")
		}
		return raw, nil // sent as is
	}
	raw, err := marshalJSON(result)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: failed to marshal result: %w", err)
	}
	return raw, nil
}
