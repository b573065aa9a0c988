package jsonrpc

import (
	"bytes"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	json "github.com/go-json-experiment/json/v1"
)

// The JSON seam: every pass the library makes over JSON text, other than
// its own validator (valid.go) and scanner (scan.go), goes through these,
// so that the engine behind them can be measured and changed in one place.
//
// The engine is go-json-experiment's v1 package: encoding/json's API and
// behaviour (user types decode exactly as encoding/json v1 decodes them;
// error texts may word things differently) on the encoding/json/v2 engine,
// which is what encoding/json itself runs on from Go 1.27. Measured end to
// end (bench/, W1echo, 6 interleaved rounds): a 1 KiB echo over WebSocket
// 79.8 -> 53.5 us, over TCP 65-70 -> 47 us, 3 fewer allocations per call.

// marshalJSON encodes v.
func marshalJSON(v any) ([]byte, error) { return json.Marshal(v) }

// unmarshalJSON decodes b into v.
func unmarshalJSON(b []byte, v any) error { return json.Unmarshal(b, v) }

// appendJSON appends the encoding of v to b, as marshalJSON would encode
// it (the same v1 options), without an intermediate copy: the encoder
// writes straight into b's spare capacity, growing it if need be. On error
// b is returned unchanged in length.
func appendJSON(b []byte, v any) ([]byte, error) {
	a := appenders.Get().(*appender)
	a.buf = *bytes.NewBuffer(b)
	a.enc.Reset(&a.buf, json.DefaultOptionsV1())
	err := jsonv2.MarshalEncode(&a.enc, v)
	out := a.buf.Bytes()
	// The pooled encoder still refers to out's array until its next
	// Reset, which it gets before it writes again.
	a.buf = bytes.Buffer{}
	appenders.Put(a)
	if err != nil {
		return b, err
	}
	// The encoder ends a top-level value with a newline; Marshal does not.
	if n := len(out); n > len(b) && out[n-1] == '\n' {
		out = out[:n-1]
	}
	return out, nil
}

// appender is a pooled encoder and the buffer it writes into.
type appender struct {
	buf bytes.Buffer
	enc jsontext.Encoder
}

var appenders = sync.Pool{New: func() any { return new(appender) }}
