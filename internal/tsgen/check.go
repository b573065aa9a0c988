package tsgen

import (
	"fmt"
	"strings"
)

// check reports the first member of doc that Generate reads and that is
// not of the type OpenRPC gives it: a document from a server's
// rpc.discover is the server's to write, and a malformed one is an error,
// never a panic (TestReviewMalformedDocumentIsAnError).
func check(doc map[string]any) error {
	if err := checkList(doc, "methods", true); err != nil {
		return err
	}
	if err := checkList(doc, "x-notifications", false); err != nil {
		return err
	}
	return checkList(doc, "x-topics", false)
}

// checkList checks that doc[key] is a list of objects, each with a string
// name, a list of object params and an object result if it has them.
func checkList(doc map[string]any, key string, needed bool) error {
	v, ok := doc[key]
	if !ok && !needed {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%s is not a list", key)
	}
	for i, e := range list {
		o, ok := e.(map[string]any)
		if !ok {
			return fmt.Errorf("%s[%d] is not an object", key, i)
		}
		if _, ok := o["name"].(string); !ok {
			return fmt.Errorf("%s[%d]'s name is not a string", key, i)
		}
		if r, has := o["result"]; has {
			if _, ok := r.(map[string]any); !ok {
				return fmt.Errorf("%s[%d]'s result is not an object", key, i)
			}
		}
		if p, has := o["params"]; has {
			params, ok := p.([]any)
			if !ok {
				return fmt.Errorf("%s[%d]'s params is not a list", key, i)
			}
			for j, p := range params {
				if po, ok := p.(map[string]any); !ok {
					return fmt.Errorf("%s[%d].params[%d] is not an object", key, i, j)
				} else if _, ok := po["name"].(string); !ok {
					return fmt.Errorf("%s[%d].params[%d]'s name is not a string", key, i, j)
				}
			}
		}
	}
	return nil
}

// name is the name of a method or topic that check has seen.
func name(o map[string]any) string {
	n, _ := o["name"].(string)
	return n
}

// oneLine is v's text on one line, for a // comment: a line break in a
// document's title would end the comment and make the rest TypeScript
// (TestReviewTitleInjectsDeclarations).
func oneLine(v any) string {
	s, _ := v.(string)
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == '\u2028' || r == '\u2029' || r == '\u0085' {
			return ' '
		}
		return r
	}, s)
}
