package apidump

import (
	"fmt"
	"go/types"
	"strings"
)

// typ writes t as Go source would, without parameter names, with the
// package's own names unqualified and others qualified by package name.
func (w *writer) typ(t types.Type) string {
	var b strings.Builder
	w.writeType(&b, t)
	return b.String()
}

func (w *writer) writeType(b *strings.Builder, t types.Type) {
	switch t := t.(type) {
	case *types.Basic:
		b.WriteString(t.Name())
	case *types.Named:
		w.writeTypeName(b, t.Obj(), t.TypeArgs())
	case *types.Alias:
		w.writeTypeName(b, t.Obj(), t.TypeArgs())
	case *types.TypeParam:
		b.WriteString(t.Obj().Name())
	case *types.Pointer:
		b.WriteByte('*')
		w.writeType(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		w.writeType(b, t.Elem())
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		w.writeType(b, t.Elem())
	case *types.Map:
		b.WriteString("map[")
		w.writeType(b, t.Key())
		b.WriteByte(']')
		w.writeType(b, t.Elem())
	case *types.Chan:
		b.WriteString(map[types.ChanDir]string{types.SendRecv: "chan ", types.SendOnly: "chan<- ", types.RecvOnly: "<-chan "}[t.Dir()])
		w.writeType(b, t.Elem())
	case *types.Signature:
		b.WriteString("func")
		b.WriteString(w.signature(t))
	case *types.Struct:
		w.writeStruct(b, t)
	case *types.Interface:
		w.writeInterface(b, t)
	default:
		b.WriteString(types.TypeString(t, w.qualifier))
	}
}

func (w *writer) qualifier(p *types.Package) string {
	if p == w.pkg {
		return ""
	}
	return p.Name()
}

func (w *writer) writeTypeName(b *strings.Builder, obj *types.TypeName, args *types.TypeList) {
	if p := obj.Pkg(); p != nil && p.Path() != w.pkg.Path() {
		b.WriteString(p.Name() + ".")
	}
	b.WriteString(obj.Name())
	if args.Len() == 0 {
		return
	}
	b.WriteByte('[')
	for i := range args.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		w.writeType(b, args.At(i))
	}
	b.WriteByte(']')
}

// writeStruct writes an anonymous struct type with all its fields: a
// literal's unexported fields matter to whoever writes one.
func (w *writer) writeStruct(b *strings.Builder, s *types.Struct) {
	if s.NumFields() == 0 {
		b.WriteString("struct{}")
		return
	}
	b.WriteString("struct{")
	for i := range s.NumFields() {
		if i > 0 {
			b.WriteString(";")
		}
		f := s.Field(i)
		b.WriteByte(' ')
		if !f.Embedded() {
			b.WriteString(f.Name() + " ")
		}
		w.writeType(b, f.Type())
	}
	b.WriteString(" }")
}

func (w *writer) writeInterface(b *strings.Builder, it *types.Interface) {
	if it.Empty() {
		b.WriteString("interface{}")
		return
	}
	if !it.IsMethodSet() {
		b.WriteString(types.TypeString(it, w.qualifier))
		return
	}
	b.WriteString("interface{")
	for i := range it.NumMethods() {
		if i > 0 {
			b.WriteString(";")
		}
		m := it.Method(i)
		b.WriteString(" " + m.Name())
		b.WriteString(w.signature(m.Type().(*types.Signature)))
	}
	b.WriteString(" }")
}

// signature writes "(params) results" without names.
func (w *writer) signature(sig *types.Signature) string {
	var b strings.Builder
	b.WriteByte('(')
	for i := range sig.Params().Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		t := sig.Params().At(i).Type()
		if sig.Variadic() && i == sig.Params().Len()-1 {
			b.WriteString("...")
			t = t.(*types.Slice).Elem()
		}
		w.writeType(&b, t)
	}
	b.WriteByte(')')
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		b.WriteByte(' ')
		w.writeType(&b, res.At(0).Type())
	default:
		b.WriteString(" (")
		for i := range res.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			w.writeType(&b, res.At(i).Type())
		}
		b.WriteByte(')')
	}
	return b.String()
}

// typeParams writes "[P any, R any]", or nothing for a non-generic object.
func (w *writer) typeParams(tps *types.TypeParamList) string {
	if tps.Len() == 0 {
		return ""
	}
	var ps []string
	for tp := range tps.TypeParams() {
		ps = append(ps, tp.Obj().Name()+" "+w.typ(tp.Constraint()))
	}
	return "[" + strings.Join(ps, ", ") + "]"
}
