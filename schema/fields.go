package schema

import (
	"reflect"
	"slices"
	"strings"
)

// fieldInfo is one member of a struct's JSON object.
type fieldInfo struct {
	name     string // the JSON name
	goName   string
	typ      reflect.Type
	index    []int
	tagged   bool   // the name comes from a tag
	optional bool   // omitempty, omitzero, or promoted through an embedded pointer (absent when it is nil): it may be absent
	quoted   bool   // the ",string" option
	doc      string // the doc tag: the member's description
	refused  string // an option the engine refuses the type for ("format:...")
}

// fields lists the members of t's JSON object as encoding/json finds them:
// exported fields and those of embedded structs (breadth first, a shallower
// field hiding deeper ones of its name, a tagged one winning among fields
// of one depth, and two of one depth both untagged hiding each other).
func fields(t reflect.Type) []fieldInfo {
	var all []fieldInfo
	next := []level{{typ: t}}
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current := next
		next = nil
		count := map[reflect.Type]int{}
		for _, l := range current {
			count[l.typ]++
		}
		for _, l := range current {
			if visited[l.typ] {
				continue
			}
			visited[l.typ] = true
			for i := range l.typ.NumField() {
				n, m := len(all), len(next)
				all, next = member(l.typ.Field(i), append(slices.Clone(l.index), i), all, next)
				for j := n; l.ptr && j < len(all); j++ {
					all[j].optional = true
				}
				for j := m; l.ptr && j < len(next); j++ {
					next[j].ptr = true
				}
				if len(all) > n && count[l.typ] > 1 {
					all = append(all, all[n]) // embedded twice at one depth: its fields hide each other
				}
			}
		}
	}
	return dominant(all)
}

// level is a struct whose fields are looked at, at index in the outer one.
type level struct {
	typ   reflect.Type
	index []int
	ptr   bool // reached through an embedded pointer: its fields may be absent
}

// member adds f to the fields or, for an embedded struct without a name
// tag, its type to the next level.
func member(f reflect.StructField, index []int, all []fieldInfo, next []level) ([]fieldInfo, []level) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return all, next
	}
	name, opts, _ := strings.Cut(tag, ",")
	ft := f.Type
	if f.Anonymous {
		ptr := ft.Kind() == reflect.Pointer
		if ptr {
			ft = ft.Elem()
		}
		if !f.IsExported() && ft.Kind() != reflect.Struct {
			return all, next
		}
		if ptr && !f.IsExported() && name == "" {
			// the engine cannot set a pointer to an unexported struct, so
			// it refuses every field of one: the schema takes none
			// (TestReviewEmbeddedPointerToUnexportedStruct)
			return all, next
		}
		if name == "" && ft.Kind() == reflect.Struct {
			return all, append(next, level{typ: ft, index: index, ptr: ptr})
		}
	} else if !f.IsExported() {
		return all, next
	}
	info := fieldInfo{name: name, goName: f.Name, typ: f.Type, index: index, tagged: name != "", doc: f.Tag.Get("doc")}
	if !validName(name) {
		info.name, info.tagged = f.Name, false
	}
	for opt := range strings.SplitSeq(opts, ",") {
		switch opt {
		case "omitempty", "omitzero":
			info.optional = true
		case "string":
			info.quoted = true
		default:
			if strings.HasPrefix(opt, "format:") {
				info.refused = opt
			}
		}
	}
	return append(all, info), next
}

// validName reports whether a tag's name is one encoding/json takes.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case c == '\\' || c == '"' || c == '\'' || c == '`' || c == ',':
			return false
		case c < ' ':
			return false
		}
	}
	return true
}

// dominant keeps, of the fields of one name, the one encoding/json
// marshals, in the order of their indexes.
func dominant(all []fieldInfo) []fieldInfo {
	byName := map[string][]fieldInfo{}
	for _, f := range all {
		byName[f.name] = append(byName[f.name], f)
	}
	var out []fieldInfo
	for _, fs := range byName {
		depth := len(fs[0].index)
		for _, f := range fs {
			depth = min(depth, len(f.index))
		}
		var top, tagged []fieldInfo
		for _, f := range fs {
			if len(f.index) == depth {
				top = append(top, f)
				if f.tagged {
					tagged = append(tagged, f)
				}
			}
		}
		switch {
		case len(tagged) == 1:
			out = append(out, tagged[0])
		case len(top) == 1 && len(tagged) == 0:
			out = append(out, top[0])
		}
	}
	slices.SortFunc(out, func(a, b fieldInfo) int { return slices.Compare(a.index, b.index) })
	return out
}
