package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Request is an incoming request or notification as a handler sees it.
type Request struct {
	// ID is the id the caller sent, or the zero ID for a notification.
	ID ID
	// Method is the method name.
	Method string
	// Params is the raw params member: a JSON object or array, or nil when
	// the caller omitted it.
	Params json.RawMessage
}

// IsNotification reports whether the request has no id, so that no reply
// will be sent for it.
func (r *Request) IsNotification() bool { return r.ID.IsZero() }

// response is the outcome of a call: a raw Result, or an Error.
type response struct {
	ID     ID
	Result json.RawMessage
	Error  *Error

	invalid error // the reply was not a valid response: the call fails with it

	// reused: the decoder's own (see decoder.one), valid until it decodes
	// the next message. A call's channel gets a copy; whoever keeps it
	// longer keeps a copy too (see replyGroup.put).
	reused bool
}

// message is one decoded element of an incoming message: a request, a
// response, or something invalid that gets an error reply.
type message struct {
	req     Request
	resp    *response
	invalid *Error // non-nil: reply with this error under req.ID (or null)
}

// decodeMessage splits an incoming message into its elements. batch reports
// whether the message was an array; a nil slice with a nil error object
// never occurs: invalid input yields one invalid element.
func decodeMessage(data []byte) (msgs []message, batch bool) {
	var d decoder
	return d.decode(data)
}

// decoder decodes the messages of one connection, for its read loop alone.
// It reuses its element slices (valid until the next decode) and keeps the
// method names it has seen, so that a name is not allocated per request.
type decoder struct {
	msgs  []message
	els   []element // a batch's elements, as readBatch found them
	names map[string]string
	resps []response // a slab for the responses of the message being decoded
	one   *response  // the response of a message of one element, reused; made on first need
}

// newResponse returns a response from the slab for the current message,
// which holds n elements. The reply of a message of one element, the
// common case, is the decoder's own, reused for the next such message: the
// pending table copies it to the call's channel, so a call's reply costs
// no allocation of its own.
func (d *decoder) newResponse(n int) *response {
	if n == 1 {
		// Behind a pointer, so that a Peer that never gets a reply (most
		// servers) does not carry it: inline it took the Peer from the
		// 1,152-byte size class to the 1,280 one.
		if d.one == nil {
			d.one = new(response)
		}
		*d.one = response{reused: true}
		return d.one
	}
	if len(d.resps) == cap(d.resps) {
		d.resps = make([]response, 0, n)
	}
	d.resps = d.resps[:len(d.resps)+1]
	return &d.resps[len(d.resps)-1]
}

// maxNames bounds the method names a decoder keeps, and maxNameLen their
// length: a remote side that sends long names of its own making must not
// make the connection hold them for its whole life.
const (
	maxNames   = 256
	maxNameLen = 64
)

// decode validates data and finds its envelopes' members in one pass
// (envelope.go), then classifies each element.
func (d *decoder) decode(data []byte) (msgs []message, batch bool) {
	clear(d.msgs) // drop references into the previous message
	clear(d.els)
	msgs, d.els = d.msgs[:0], d.els[:0]
	defer func() { d.msgs = msgs }()
	invalid := func(e *Error) []message {
		return append(msgs[:0], message{req: Request{ID: NullID()}, invalid: e})
	}
	data = trimSpace(data)
	if len(data) == 0 {
		return invalid(errParse()), false
	}
	switch data[0] {
	case '{':
		m, end, ok := readObject(data, 0, 0)
		if !ok || end != len(data) {
			return invalid(errParse()), false
		}
		d.resps = nil
		return append(msgs, d.object(&m, data, 1)), false
	case '[':
		els, ok := readBatch(data, d.els)
		d.els = els
		if !ok {
			return invalid(errParse()), false
		}
		d.resps = nil // the replies of this batch get a slab of their own
		for i := range els {
			if els[i].obj {
				msgs = append(msgs, d.object(&els[i].m, els[i].text, len(els)))
			} else {
				msgs = append(msgs, message{req: Request{ID: NullID()}, invalid: errInvalidRequest()})
			}
		}
		if len(msgs) == 0 {
			return invalid(errInvalidRequest()), false
		}
		return msgs, true
	default:
		if !validJSON(data) {
			return invalid(errParse()), false
		}
		return invalid(errInvalidRequest()), false
	}
}

// name returns the method name a raw JSON string holds, from the names
// seen before when it can.
func (d *decoder) name(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return stringValue(v)
	}
	raw := v[1 : len(v)-1]
	if s, ok := d.names[string(raw)]; ok {
		return s, true
	}
	s := string(raw)
	if len(d.names) < maxNames && len(s) <= maxNameLen {
		if d.names == nil {
			d.names = make(map[string]string)
		}
		d.names[s] = s
	}
	return s, true
}

// members holds the raw values of the members of an envelope object that
// JSON-RPC defines; nil means absent.
type members struct {
	jsonrpc, method, params, id, result, err []byte
}

// object classifies one valid object, obj, whose members are m: an
// element of a message of n.
func (d *decoder) object(m *members, obj []byte, n int) message {
	if m.method == nil && (m.result != nil || m.err != nil) {
		return decodeResponse(m, obj, d.newResponse(n))
	}
	return d.request(m)
}

func (d *decoder) request(m *members) message {
	var msg message
	idOK := m.id == nil || validIDToken(m.id)
	if m.id != nil {
		msg.req.ID = ID{raw: string(m.id)}
	}
	method, methodOK := d.name(m.method)
	msg.req.Method = method
	paramsOK := m.params == nil || m.params[0] == '{' || m.params[0] == '['
	if !idOK || !isVersion(m.jsonrpc) || !methodOK || !paramsOK {
		if !idOK || m.id == nil {
			msg.req.ID = NullID()
		}
		msg.invalid = errInvalidRequest()
		return msg
	}
	if m.params != nil {
		msg.req.Params = m.params
	}
	return msg
}

// decodeResponse returns a response element, or an invalid element whose
// error is only logged: a response never gets a reply. An invalid one with
// a usable id also carries an *InvalidResponseError, so that the call it
// names fails at once instead of waiting for a reply that will not come.
//
// Two things the specification does not allow are accepted, since peers in
// the wild send them and their meaning is plain: a null member next to the
// other one ("error": null beside a result, or "result": null beside an
// error), and an error object without a message (read as "").
func decodeResponse(m *members, obj []byte, resp *response) message {
	bad := func(why string) message {
		resp.invalid = newInvalidResponse(why, obj)
		return message{resp: resp, invalid: &Error{Code: CodeInvalidRequest, Message: "invalid response: " + why}}
	}
	if m.id == nil || !validIDToken(m.id) {
		return bad("missing or invalid id")
	}
	resp.ID = ID{raw: string(m.id)}
	if !isVersion(m.jsonrpc) {
		return bad(`jsonrpc is not "2.0"`)
	}
	if m.result != nil && m.err != nil {
		switch {
		case string(m.err) == "null":
			m.err = nil
		case string(m.result) == "null":
			m.result = nil
		}
	}
	if (m.result == nil) == (m.err == nil) {
		return bad("needs exactly one of result and error")
	}
	if m.err != nil {
		e, err := decodeError(m.err)
		if err != nil {
			return bad(err.Error())
		}
		resp.Error = e
		return message{resp: resp}
	}
	resp.Result = m.result
	return message{resp: resp}
}

// decodeError decodes an error object: an integer code is required, and
// the message is a string when present.
func decodeError(raw []byte) (*Error, error) {
	var w struct {
		Code    json.RawMessage `json:"code"` // raw: a json.Number would take "1"
		Message json.RawMessage `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if raw[0] != '{' || unmarshalJSON(raw, &w) != nil || w.Code == nil {
		return nil, errors.New("error member is not an error object")
	}
	code, err := strconv.ParseInt(string(w.Code), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("error code %.20s is not an integer", w.Code)
	}
	var msg string
	if w.Message != nil && string(w.Message) != "null" {
		var ok bool
		if msg, ok = stringValue(w.Message); !ok {
			return nil, errors.New("error message is not a string")
		}
	}
	return &Error{Code: code, Message: msg, Data: w.Data}, nil
}

func isVersion(v []byte) bool {
	if string(v) == `"2.0"` {
		return true
	}
	s, ok := stringValue(v)
	return ok && s == "2.0"
}

// stringValue returns the Go string of a raw JSON string value.
func stringValue(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if unmarshalJSON(v, &s) != nil {
		return "", false
	}
	return s, true
}
