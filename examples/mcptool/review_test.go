package main

import (
	"bytes"
	"encoding/json"
	"testing"

	jsonschema "github.com/santhosh-tekuri/jsonschema/v6"
)

// TestReviewInputSchemaTakesWhatArgsRefuses: summarize_file's inputSchema
// says maxTokens is an "integer", which JSON Schema takes as 50.0 or 5e1;
// args (encoding/json into an int) refuses both, so a client that
// validated its arguments against tools/list's schema gets Invalid params.
func TestReviewInputSchemaTakesWhatArgsRefuses(t *testing.T) {
	var in json.RawMessage
	for _, tl := range tools {
		if tl.def.Name == "summarize_file" {
			in = tl.def.InputSchema
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem:///in.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem:///in.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{`{"path":"a","maxTokens":50.0}`, `{"path":"a","maxTokens":5e1}`} {
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(arg)))
		verr := sch.Validate(v)
		var a summarizeArgs
		aerr := args(&callToolParams{Arguments: json.RawMessage(arg)}, &a)
		if verr == nil && aerr != nil {
			t.Errorf("%s validates against inputSchema %s, but args refuses it: %v", arg, in, aerr)
		}
	}
}
