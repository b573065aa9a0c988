package cluster

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/peerwire/jsonrpc"
)

// NATS headers the nodes use among themselves.
const (
	hdrOrigin = "Jsonrpc-Origin"  // id of the node that published a broadcast
	hdrCallID = "Jsonrpc-Call-Id" // a cross-node call's id, which a cancel names
	hdrStatus = "Jsonrpc-Status"  // "gone": the name's holder has left
)

const statusGone = "gone"

// token encodes a topic or peer name as a single NATS subject token, so
// that any string is a valid name: the bytes a token may not hold ('.',
// '*', '>', whitespace and control bytes, '%' itself and every byte outside
// printable ASCII) become %XX, and the empty name becomes "%" (which no
// encoding produces otherwise). Distinct names give distinct tokens.
func token(name string) string {
	if name == "" {
		return "%"
	}
	if !needsEscape(name) {
		return name
	}
	var b strings.Builder
	b.Grow(len(name) + 8)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plain(s[i]) {
			return true
		}
	}
	return false
}

// plain reports whether c may stand for itself in a token.
func plain(c byte) bool {
	return c > ' ' && c < 0x7f && c != '.' && c != '*' && c != '>' && c != '%'
}

// frame encodes a notification or call for NATS: the method's length as a
// uvarint, the method, then the params as JSON (nothing for none). The
// method travels in the payload, not in a header, so that any method name
// goes through unchanged.
func frame(method string, params json.RawMessage) []byte {
	b := make([]byte, 0, binary.MaxVarintLen64+len(method)+len(params))
	b = binary.AppendUvarint(b, uint64(len(method)))
	b = append(b, method...)
	return append(b, params...)
}

var errBadFrame = errors.New("cluster: malformed message from another node")

// unframe splits what frame made. params is nil when there were none.
func unframe(data []byte) (method string, params json.RawMessage, err error) {
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)-k) {
		return "", nil, errBadFrame
	}
	method = string(data[k : k+int(n)])
	if rest := data[k+int(n):]; len(rest) > 0 {
		params = rest
	}
	return method, params, nil
}

// marshalParams encodes params as jsonrpc.Peer does: nil is no params; a
// json.RawMessage goes as is; anything else must encode to a JSON object or
// array.
func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	raw, ok := params.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(params); err != nil {
			return nil, fmt.Errorf("cluster: failed to marshal params: %w", err)
		}
		if string(raw) == "null" { // a nil map, slice or pointer
			return nil, nil
		}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' && raw[0] != '[' || !json.Valid(raw) {
		return nil, fmt.Errorf("cluster: params must be a JSON object or array, got %.20q", raw)
	}
	return raw, nil
}

// ErrTooLarge is wrapped by the error of a Notify or Call whose message
// would exceed the NATS server's max_payload (1 MiB unless configured
// otherwise). It wraps nats.ErrMaxPayload too.
var ErrTooLarge = fmt.Errorf("cluster: message over the NATS server's max_payload: %w", nats.ErrMaxPayload)

// checkSize fails with ErrTooLarge when m would not fit in the server's
// max_payload, as far as the connection knows it (once it has connected).
func checkSize(nc *nats.Conn, m *nats.Msg) error {
	max := nc.MaxPayload()
	if max <= 0 {
		return nil // never connected yet: publishing will tell
	}
	size := len(m.Data)
	for k, vs := range m.Header {
		for _, v := range vs {
			size += len(k) + len(v) + 4 // "k: v\r\n"
		}
	}
	if len(m.Header) > 0 {
		size += len("NATS/1.0\r\n\r\n")
	}
	if int64(size) > max {
		return fmt.Errorf("%w: %d bytes, max_payload is %d", ErrTooLarge, size, max)
	}
	return nil
}

// publishErr turns a failed publish into an error that says what failed.
func publishErr(what string, err error) error {
	if errors.Is(err, nats.ErrMaxPayload) {
		return fmt.Errorf("%s: %w", what, ErrTooLarge)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// response is the reply to a cross-node call: a JSON-RPC response object,
// whose id is the call's id.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      string          `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}
