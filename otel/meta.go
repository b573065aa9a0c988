package otel

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

var jsonUnmarshal = json.Unmarshal

// traceparent is the W3C field whose absence spares extract its decoding.
var traceparent = []byte("traceparent")

// inject returns params with the trace context of ctx in the dialect's
// member, merged with what the member already holds (MCP's progressToken,
// say). Params that are not an object, or ctx with nothing to carry, are
// returned as they are.
func (t *Telemetry) inject(ctx context.Context, params json.RawMessage) json.RawMessage {
	if t.w3c && !trace.SpanContextFromContext(ctx).IsValid() {
		return params // W3C carries nothing without a valid span context
	}
	carrier := propagation.MapCarrier{}
	t.prop.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return params
	}
	fields, err := json.Marshal(map[string]string(carrier))
	if err != nil {
		return params
	}
	trimmed := bytes.TrimSpace(params)
	if len(trimmed) == 0 {
		return t.withMember(nil, fields)
	}
	if trimmed[0] != '{' {
		return params // an array has no place for it
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return params
	}
	old, ok := obj[t.tc.Member]
	if !ok {
		return t.withMember(trimmed, fields)
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(old, &meta); err != nil || meta == nil {
		return params // the member is not an object: leave it to its owner
	}
	for k, v := range carrier {
		b, _ := json.Marshal(v)
		meta[k] = b
	}
	if obj[t.tc.Member], err = json.Marshal(meta); err != nil {
		return params
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return params
	}
	return out
}

// withMember returns the object obj (nil: an empty one) with the member
// holding fields put first.
func (t *Telemetry) withMember(obj []byte, fields []byte) json.RawMessage {
	name, _ := json.Marshal(t.tc.Member)
	out := make([]byte, 0, len(obj)+len(name)+len(fields)+3)
	out = append(out, '{')
	out = append(out, name...)
	out = append(out, ':')
	out = append(out, fields...)
	rest := bytes.TrimSpace(obj)
	if len(rest) > 1 {
		rest = bytes.TrimSpace(rest[1:])
		if len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, rest...)
	}
	return append(out, '}')
}

// maxTraceState is the longest tracestate taken from what the remote side
// sends (a served call's params, a NATS message's headers): W3C Trace
// Context asks that at least 512 characters be propagated and allows
// dropping entries, so a longer one is dropped whole, and the traceparent
// kept. Else a client's bytes would go on with every message its call
// causes: to each subscriber of a topic it publishes to, into each stream
// message's headers.
const maxTraceState = 512

// keepField reports whether the propagator's field f, with the value v the
// remote side sent, is taken: all but a tracestate over maxTraceState.
func keepField(f, v string) bool {
	return len(v) <= maxTraceState || !strings.EqualFold(f, "tracestate")
}

// extract returns ctx with the remote span context params carry in the
// dialect's member, if they carry one. Only the propagator's own fields
// are decoded.
func (t *Telemetry) extract(ctx context.Context, params json.RawMessage) context.Context {
	trimmed := bytes.TrimSpace(params)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return ctx
	}
	if t.w3c && !bytes.Contains(trimmed, traceparent) && bytes.IndexByte(trimmed, '\\') < 0 {
		return ctx // no traceparent, not even escaped: nothing to decode
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return ctx
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(obj[t.tc.Member], &meta); err != nil || meta == nil {
		return ctx
	}
	carrier := propagation.MapCarrier{}
	for _, f := range t.prop.Fields() {
		var v string
		if raw, ok := meta[f]; ok && json.Unmarshal(raw, &v) == nil && keepField(f, v) {
			carrier[f] = v
		}
	}
	if len(carrier) == 0 {
		return ctx
	}
	return t.prop.Extract(ctx, carrier)
}
