package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	jsonschema "github.com/santhosh-tekuri/jsonschema/v6"
)

// TestToolSchemas pins that each tool's inputSchema is made from the Go
// type its arguments decode into: a 2020-12 schema of an object that
// takes the arguments the tool takes, and refuses those args refuses (a
// wrong kind) or wait refuses (seconds out of bounds, from the type's own
// schema).
func TestToolSchemas(t *testing.T) {
	cases := map[string]struct{ taken, refused []string }{
		"list_files":     {[]string{`{}`, `{"path":"docs"}`}, []string{`{"path":1}`}},
		"read_file":      {[]string{`{"path":"notes.txt"}`}, []string{`{"path":true}`, `{}`}},
		"summarize_file": {[]string{`{"path":"a","maxTokens":50}`}, []string{`{"path":"a","maxTokens":"x"}`}},
		"wait":           {[]string{`{"seconds":0.5}`}, []string{`{"seconds":601}`, `{"seconds":-1}`, `{"seconds":"1"}`}},
	}
	for _, tl := range tools {
		c, ok := cases[tl.def.Name]
		if !ok {
			t.Errorf("no case for tool %s", tl.def.Name)
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tl.def.InputSchema))
		if err != nil {
			t.Fatal(err)
		}
		if doc.(map[string]any)["type"] != "object" {
			t.Errorf("%s: inputSchema %s is not an object", tl.def.Name, tl.def.InputSchema)
		}
		comp := jsonschema.NewCompiler()
		comp.DefaultDraft(jsonschema.Draft2020)
		if err := comp.AddResource("mem:///in.json", doc); err != nil {
			t.Fatal(err)
		}
		sch, err := comp.Compile("mem:///in.json")
		if err != nil {
			t.Fatalf("%s: %v", tl.def.Name, err)
		}
		check := func(in string) error {
			v, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(in)))
			return sch.Validate(v)
		}
		for _, in := range c.taken {
			if err := check(in); err != nil {
				t.Errorf("%s: %s does not validate: %v", tl.def.Name, in, err)
			}
		}
		for _, in := range c.refused {
			if err := check(in); err == nil {
				t.Errorf("%s: %s validates", tl.def.Name, in)
			}
		}
	}
	// The bounds come from seconds' own schema, and are wait's: args
	// decodes 601, wait refuses it.
	var wa waitArgs
	if err := args(&callToolParams{Arguments: json.RawMessage(`{"seconds":601}`)}, &wa); err != nil || wa.Seconds != 601 {
		t.Fatalf("args: %v, %v", wa, err)
	}
	var ae *argsError
	if _, err := wait(t.Context(), nil, &callToolParams{Arguments: json.RawMessage(`{"seconds":601}`)}); !errors.As(err, &ae) {
		t.Errorf("wait 601: %v, want an argsError", err)
	}
}
