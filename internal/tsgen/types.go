package tsgen

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// tsType is the TypeScript type of a JSON Schema made by package schema
// (its keywords: $ref, type, properties, required, additionalProperties,
// items, prefixItems, anyOf, oneOf, enum, const); indent is the
// indentation of the line it is on. A keyword it does not know narrows
// nothing: the type is then wider than the schema, never narrower.
func tsType(s any, indent string) string {
	switch s := s.(type) {
	case bool:
		if s {
			return "unknown"
		}
		return "never"
	case map[string]any:
		return objectSchema(s, indent)
	}
	return "unknown"
}

func objectSchema(s map[string]any, indent string) string {
	if ref, ok := s["$ref"].(string); ok {
		return ident(ref[strings.LastIndex(ref, "/")+1:])
	}
	if c, ok := s["const"]; ok {
		return literal(c)
	}
	if e, ok := s["enum"].([]any); ok {
		var parts []string
		for _, v := range e {
			parts = append(parts, literal(v))
		}
		return strings.Join(parts, " | ")
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok {
			var parts []string
			for _, a := range alts {
				parts = append(parts, paren(tsType(a, indent)))
			}
			return strings.Join(dedupe(parts), " | ")
		}
	}
	switch ty := s["type"].(type) {
	case string:
		return ofType(ty, s, indent)
	case []any:
		var parts []string
		for _, t := range ty {
			if name, ok := t.(string); ok {
				parts = append(parts, paren(ofType(name, s, indent)))
			}
		}
		return strings.Join(parts, " | ")
	}
	return "unknown"
}

func ofType(ty string, s map[string]any, indent string) string {
	switch ty {
	case "string":
		return "string"
	case "integer", "number":
		return "number"
	case "boolean":
		return "boolean"
	case "null":
		return "null"
	case "array":
		if pre, ok := s["prefixItems"].([]any); ok {
			least, _ := s["minItems"].(float64) // the items before it are required
			var items []string
			for i, p := range pre {
				q := "?"
				if float64(i) < least {
					q = ""
				}
				items = append(items, tsType(p, indent)+q)
			}
			return "[" + strings.Join(items, ", ") + "]"
		}
		items, ok := s["items"]
		if !ok {
			return "unknown[]"
		}
		return paren(tsType(items, indent)) + "[]"
	case "object":
		return objectType(s, indent)
	}
	return "unknown"
}

func objectType(s map[string]any, indent string) string {
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	var lines []string
	for _, name := range sortedKeys(props) {
		p := props[name]
		q := "?"
		if required[name] {
			q = ""
		}
		if d := description(p); d != "" {
			lines = append(lines, fmt.Sprintf("%s  /** %s */", indent, strings.ReplaceAll(d, "*/", "*\\/")))
		}
		lines = append(lines, fmt.Sprintf("%s  %s%s: %s;", indent, propName(name), q, tsType(p, indent+"  ")))
	}
	ap, hasAP := s["additionalProperties"]
	switch {
	case hasAP && ap == false && len(lines) == 0:
		return "Record<string, never>"
	case hasAP && ap != false && len(lines) == 0:
		return "{ [key: string]: " + tsType(ap, indent) + " }"
	case !hasAP || ap != false:
		lines = append(lines, indent+"  [key: string]: unknown;")
	}
	return "{\n" + strings.Join(lines, "\n") + "\n" + indent + "}"
}

func literal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// paren puts a union or a function type in parentheses, for [] after it.
func paren(t string) string {
	if strings.Contains(t, " | ") && !strings.HasPrefix(t, "{") {
		return "(" + t + ")"
	}
	return t
}

func dedupe(parts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range parts {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

var identRE = regexp.MustCompile(`[^A-Za-z0-9_$]`)

// ident makes a definition's name a TypeScript identifier that is not one
// the file imports, declares or uses (Params, Client, Calls, Record,
// Promise...) nor a keyword: those get a "_" after them, as do the names
// that already are one of them followed by "_"s, so that no two names
// meet (TestReviewGoTypeNamedRecordOrParams).
func ident(name string) string {
	id := identRE.ReplaceAllString(name, "_")
	if id == "" || id[0] >= '0' && id[0] <= '9' {
		id = "_" + id
	}
	if base := strings.TrimRight(id, "_"); taken[base] || reserved[base] {
		id += "_"
	}
	return id
}

// taken are the type names the generated file imports, declares or uses,
// and TypeScript's own.
var taken = map[string]bool{
	"Client": true, "CallOptions": true, "Params": true, "SubscribeHandlers": true, "Subscription": true,
	"Calls": true, "Notifications": true, "Sent": true, "Topics": true, "TypedClient": true,
	"Record": true, "Promise": true, "Omit": true,
	"any": true, "unknown": true, "never": true, "string": true, "number": true, "boolean": true,
	"undefined": true, "object": true, "symbol": true, "bigint": true, "type": true, "let": true,
}

// propName is a property's name, quoted unless it is an identifier.
func propName(name string) string {
	if labelRE.MatchString(name) {
		return name
	}
	return quote(name)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return "'" + strings.ReplaceAll(strings.Trim(string(b), `"`), "'", `\'`) + "'"
}
