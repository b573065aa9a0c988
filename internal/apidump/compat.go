package apidump

import (
	"slices"
	"strings"
)

// A Change is one difference between two API listings.
type Change struct {
	Old, New string // the line before and after; one is empty when the item was added or removed
	// Compatible reports whether a program built against Old still builds
	// against New: an item added is; an item removed or changed is not, and
	// neither is a method added to an interface that other packages can
	// implement (one without unexported methods).
	Compatible bool
}

// Compare returns the changes from the API lines old to new (as Lines
// returns them, or as an api file holds them), incompatible ones first.
// A line removed and a line added for the same item (its key: the line up
// to its type or signature) are one change of that item.
func Compare(old, new []string) []Change {
	removed, added := minus(old, new), minus(new, old)
	sealed := map[string]bool{} // interfaces with unexported methods, in new
	for _, l := range new {
		if strings.HasSuffix(l, ", unexported methods }") {
			sealed[itemKey(l)] = true
		}
	}
	var changes []Change
	for _, o := range removed {
		c := Change{Old: o}
		if i := slices.IndexFunc(added, func(n string) bool { return itemKey(n) == itemKey(o) }); i >= 0 {
			c.New = added[i]
			added = slices.Delete(added, i, i+1)
			if isInterfaceSummary(o) && sealed[itemKey(o)] {
				c.Compatible = true // methods of an interface nobody else can implement
			}
		}
		changes = append(changes, c)
	}
	for _, n := range added {
		c := Change{New: n, Compatible: true}
		if iface, ok := interfaceOf(n); ok && !sealed[iface] {
			c.Compatible = false
		}
		changes = append(changes, c)
	}
	slices.SortStableFunc(changes, func(a, b Change) int {
		switch {
		case a.Compatible == b.Compatible:
			return 0
		case !a.Compatible:
			return -1
		}
		return 1
	})
	return changes
}

// Report formats changes for a test failure: the incompatible ones, then
// the compatible ones, "-" before a line of the file and "+" before one of
// the source. It is "" when there are none.
func Report(changes []Change) string {
	var b strings.Builder
	section := func(title string, compatible bool) {
		first := true
		for _, c := range changes {
			if c.Compatible != compatible {
				continue
			}
			if first {
				b.WriteString(title + "\n")
				first = false
			}
			if c.Old != "" {
				b.WriteString("\t-" + c.Old + "\n")
			}
			if c.New != "" {
				b.WriteString("\t+" + c.New + "\n")
			}
		}
	}
	section("INCOMPATIBLE (removed or changed: a program using it may no longer build; a minor release, said under Breaking in CHANGELOG.md):", false)
	section("compatible (added):", true)
	return b.String()
}

func minus(a, b []string) []string {
	var out []string
	for _, l := range a {
		if l != "" && !strings.HasPrefix(l, "#") && !slices.Contains(b, l) {
			out = append(out, l)
		}
	}
	return out
}

// itemKey is the part of an API line that names its item: "pkg P, func F",
// "pkg P, method (*T) M", "pkg P, type T struct, F", "pkg P, const C".
func itemKey(line string) string {
	pkg, rest, ok := strings.Cut(line, ", ")
	if !ok {
		return line
	}
	words := strings.Fields(rest)
	if len(words) < 2 {
		return line
	}
	switch words[0] {
	case "func", "const", "var":
		name, _, _ := strings.Cut(words[1], "(")
		name, _, _ = strings.Cut(name, "[")
		return pkg + ", " + words[0] + " " + name
	case "method":
		if len(words) < 3 {
			return line
		}
		name, _, _ := strings.Cut(words[2], "(")
		return pkg + ", method " + words[1] + " " + name
	case "type":
		name, _, _ := strings.Cut(words[1], "[")
		if len(words) > 3 && words[2] == "interface" && words[3] == "{" {
			return pkg + ", type " + name + " interface" // its summary line
		}
		_, member, ok := strings.Cut(rest, ", ")
		if !ok { // type T struct, type T int
			return pkg + ", type " + name
		}
		if m, _, ok := strings.Cut(member, "("); ok && !strings.Contains(m, " ") {
			return pkg + ", type " + name + " member " + m // an interface method
		}
		f := strings.Fields(member) // a field's name, or "embedded T"
		n := 1
		if f[0] == "embedded" {
			n = 2
		}
		return pkg + ", type " + name + " member " + strings.Join(f[:min(n, len(f))], " ")
	}
	return line
}

func isInterfaceSummary(line string) bool {
	return strings.HasSuffix(line, "}") && strings.Contains(line, " interface { ")
}

// interfaceOf returns the key of the interface whose method line is line.
func interfaceOf(line string) (string, bool) {
	pkg, rest, _ := strings.Cut(line, ", ")
	head, member, ok := strings.Cut(rest, ", ")
	if !ok || !strings.HasSuffix(head, " interface") {
		return "", false
	}
	if m, _, ok := strings.Cut(member, "("); !ok || strings.Contains(m, " ") {
		return "", false
	}
	name := strings.Fields(head)[1]
	name, _, _ = strings.Cut(name, "[")
	return pkg + ", type " + name + " interface", true
}
