package schema

import (
	"bytes"
	"encoding/json"
	"testing"

	jsonschema "github.com/santhosh-tekuri/jsonschema/v6"
)

// compile compiles s with a 2020-12 validator that asserts formats
// (date-time) and content (base64), after checking s against the 2020-12
// meta-schema.
func compile(t *testing.T, s Schema) *jsonschema.Schema {
	t.Helper()
	text, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("marshal schema: %v", err)
	}
	doc := decode(t, text)
	meta := jsonschema.NewCompiler()
	ms, err := meta.Compile(Draft)
	if err != nil {
		t.Fatalf("compile the meta-schema: %v", err)
	}
	if err := ms.Validate(doc); err != nil {
		t.Fatalf("schema %s is not valid against the 2020-12 meta-schema: %v", text, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()
	if err := c.AddResource("mem:///schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem:///schema.json")
	if err != nil {
		t.Fatalf("compile %s: %v", text, err)
	}
	return sch
}

// decode parses JSON text as the validator wants it (numbers exact).
func decode(t *testing.T, text []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("decode %s: %v", text, err)
	}
	return v
}
