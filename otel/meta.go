package otel

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
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
	// Only the member's value changes: the other members keep their
	// bytes (TestInjectKeepsParamsBytes).
	m, ok := findMember(trimmed, t.tc.Member)
	if !ok {
		return params
	}
	if !m.found {
		return t.withMember(trimmed, fields)
	}
	meta := trimmed[m.start:m.end]
	if meta[0] != '{' {
		return params // the member is not an object: leave it to its owner
	}
	merged, ok := mergeFields(meta, carrier, fields)
	if !ok {
		return params
	}
	out := make([]byte, 0, len(trimmed)-len(meta)+len(merged))
	out = append(out, trimmed[:m.start]...)
	out = append(out, merged...)
	return append(out, trimmed[m.end:]...)
}

// mergeFields returns the object meta with the propagator's fields (the
// object fields, marshalled from carrier) in it: its members of other
// names as they are, then the fields, which replace those of their names.
func mergeFields(meta []byte, carrier propagation.MapCarrier, fields []byte) ([]byte, bool) {
	out := make([]byte, 1, len(meta)+len(fields))
	out[0] = '{'
	dec := jsontext.NewDecoder(bytes.NewReader(meta), allowDuplicates)
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	for dec.PeekKind() != '}' {
		k, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		k = k.Clone()
		v, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		var name string
		if err := json.Unmarshal(k, &name); err != nil {
			return nil, false
		}
		if _, ours := carrier[name]; ours {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, k...)
		out = append(out, ':')
		out = append(out, v...)
	}
	inner := bytes.TrimSpace(fields[1 : len(fields)-1]) // the fields' members, without braces
	if len(inner) > 0 {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, inner...)
	}
	return append(out, '}'), true
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
	// Only the member is read; the other members are skipped, not decoded
	// (TestNoopExtractSkipsParamsWithEscapes).
	m, ok := findMember(trimmed, t.tc.Member)
	if !ok || !m.found {
		return ctx
	}
	raw := trimmed[m.start:m.end]
	if t.w3c && !bytes.Contains(raw, traceparent) && bytes.IndexByte(raw, '\\') < 0 {
		return ctx
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
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
