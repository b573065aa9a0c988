package jsonrpc

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
)

// Typed adapts a function with typed params and result to a Handler. The
// request's params are decoded into P:
//
//   - absent params leave P at its zero value;
//   - a JSON object is unmarshalled into P (a struct, map or any);
//   - a JSON array is unmarshalled into P when P is a slice, an array, an
//     interface or a json.Unmarshaler; when P is a struct, the array's
//     elements fill P's exported fields in declaration order (positional
//     params), unless it is an encoding.TextUnmarshaler (netip.Addr, say);
//     for any other P, a one-element array fills P;
//   - json.RawMessage receives the params untouched.
//
// Params that do not fit P get an Invalid params error (-32602) without
// calling fn. The result R is marshalled with encoding/json.
func Typed[P, R any](fn func(context.Context, P) (R, error)) Handler {
	dec := newParamsDecoder(reflect.TypeFor[P]())
	// Params are decoded into a recycled *P (json.Unmarshal needs a pointer,
	// which would otherwise put every P on the heap), copied out, and the
	// *P zeroed before it goes back, so the next decode starts from zero.
	pool := sync.Pool{New: func() any { return new(P) }}
	return HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		pp := pool.Get().(*P)
		err := dec.decode(req.Params, pp)
		p := *pp
		*pp = *new(P)
		pool.Put(pp)
		if err != nil {
			return nil, errInvalidParams(err)
		}
		return fn(ctx, p)
	})
}

// Register registers Typed(fn) on m for method, as m.Handle does, and keeps
// P and R for the method's description (Mux.Methods).
func Register[P, R any](m *Mux, method string, fn func(context.Context, P) (R, error)) {
	m.typed(method, Typed(fn), reflect.TypeFor[P](), reflect.TypeFor[R](), false)
}

// RegisterNotification registers fn on m for method, a notification that
// has no result to return: its params are decoded into P as Typed decodes
// them. As for every handler of a notification, fn's error (and an Invalid
// params error, when the params do not fit P) goes nowhere; return one to
// say so in an interceptor. Should the other side send method as a call, it
// gets null as the result, or the error. P is kept for the method's
// description (Mux.Methods), which says it is a notification.
func RegisterNotification[P any](m *Mux, method string, fn func(context.Context, P) error) {
	m.typed(method, Typed(func(ctx context.Context, p P) (any, error) {
		return nil, fn(ctx, p)
	}), reflect.TypeFor[P](), nil, true)
}

// paramsDecoder decodes params into one type, planned once per handler.
type paramsDecoder struct {
	mode   int   // how a JSON array is decoded: one of the arrayAs constants
	fields []int // arrayAsFields: the struct's positional field indexes
	elem   reflect.Type
	most   int // a Go array's length: positional params past it are refused; -1 for no bound
}

const (
	arrayAsValue  = iota // unmarshal the array into the value itself
	arrayAsFields        // fill a struct's fields in order
	arrayAsOne           // a one-element array holds the value
)

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func newParamsDecoder(t reflect.Type) *paramsDecoder {
	d := &paramsDecoder{mode: arrayAsValue, most: -1}
	base := t
	for base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if reflect.PointerTo(base).Implements(unmarshalerType) || t.Implements(unmarshalerType) {
		return d
	}
	if reflect.PointerTo(base).Implements(textUnmarshalerType) {
		d.mode = arrayAsOne // a string in JSON, as a text scalar is (TestReviewTypedTextUnmarshalerStructParams)
		return d
	}
	switch base.Kind() {
	case reflect.Array:
		d.most = base.Len()
	case reflect.Slice, reflect.Interface:
	case reflect.Struct:
		d.mode, d.elem = arrayAsFields, base
		for i := range base.NumField() {
			f := base.Field(i)
			if f.IsExported() && f.Tag.Get("json") != "-" {
				d.fields = append(d.fields, i)
			}
		}
	default:
		d.mode = arrayAsOne
	}
	return d
}

// decode fills *dst (a *P) from raw params.
func (d *paramsDecoder) decode(raw json.RawMessage, dst any) error {
	if raw == nil {
		return nil
	}
	if raw[0] != '[' || d.mode == arrayAsValue {
		if raw[0] == '[' && d.most >= 0 {
			if n := arrayLen(raw); n > d.most {
				return fmt.Errorf("want at most %d positional params, got %d", d.most, n)
			}
		}
		return unmarshalParams(raw, dst, "")
	}
	var elems []json.RawMessage
	if err := unmarshalJSON(raw, &elems); err != nil {
		return err
	}
	if d.mode == arrayAsOne {
		if len(elems) != 1 {
			return fmt.Errorf("want an array of one element, got %d", len(elems))
		}
		return unmarshalParams(elems[0], dst, "[0]")
	}
	if len(elems) > len(d.fields) {
		return fmt.Errorf("want at most %d positional params, got %d", len(d.fields), len(elems))
	}
	v := reflect.ValueOf(dst).Elem()
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	for i, el := range elems {
		f := v.Field(d.fields[i])
		if err := unmarshalParams(el, f.Addr().Interface(), fmt.Sprintf("[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// unmarshalParams is json.Unmarshal with an error that says, in JSON's
// words, where params at (a path, "" for the top) went wrong (see
// paramsError): its text goes to the other side.
func unmarshalParams(raw []byte, dst any, at string) error {
	if err := unmarshalJSON(raw, dst); err != nil {
		return errors.New(paramsError(err, at))
	}
	return nil
}
